//! A time step captured as one graph (`cunumpy.cuda.graph`): the recorded launch list, the
//! graph's parameters and the checks a replay's new values pass, and the replay itself.
//!
//! While a capture is open on a thread ([`begin`] .. [`finish`]), every launch path of this
//! crate's callers (a `CudaKernel` launch, the CUDA side of a `Kernel`, a fused plan) records
//! its launch here instead of (on the emulated device) or as well as (on a GPU, where the
//! launch goes to the capturing stream and becomes a node of the driver's graph) running it:
//! the kernel, its launch shape, its checked and packed parameters, and which of them are the
//! graph's parameters ([`Binding`]). Nothing is recorded in the ledger then: nothing ran.
//!
//! A replay with new parameter values checks each value against what the parameter was at
//! capture ([`ParamSpec::check`]: same kind of scalar; an array of the same dtype, shape,
//! strides and device), then packs it into every kernel parameter it is bound to exactly as
//! a launch packs it (core's `ArgPlan`). What fails the first check asks for a re-capture
//! ([`GraphError::Recapture`]); what fails the second is the launch's own argument error. On
//! a GPU the changed launches' nodes are then updated in place in the instantiated graph
//! (`cuGraphExecKernelNodeSetParams`) before the caller launches it; on the emulated device
//! the recorded launches run in order ([`Graph::replay_emulated`]).

use crate::{emulated, Device, RuntimeError};
use cunumpy_core::args::{Arg, ArgError, ArgPlan, LaunchBuffer, Scalar, ScalarSource};
use cunumpy_core::dtype::DType;
use cunumpy_core::launch::LaunchShape;
use cunumpy_core::ledger::{Event, EventKind, Ledger};
use cunumpy_cuda::{Driver, Function, StreamHandle};
use cunumpy_emu::{EmuLibrary, LaunchOptions};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// What cannot be captured, or replayed with the values given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    /// A call inside the captured step that a graph cannot hold (raised at that call).
    #[error("cannot capture {what} at {site} into a graph: {why}")]
    NotCapturable {
        /// The kernel or operation.
        what: String,
        /// The user's `file:line`.
        site: String,
        /// Why, and what to do instead.
        why: String,
    },
    /// A replay's value that the captured graph cannot take: capture again.
    #[error("graph parameter {label}: {reason}; capture the graph again for it")]
    Recapture {
        /// The parameter (`parameter 2 (dt)`).
        label: String,
        /// What it was at capture and what was given.
        reason: String,
    },
    /// A replay's value refused by a kernel it reaches, as a launch would refuse it.
    #[error("{error} (graph parameter {label}, replayed into kernel '{kernel}')")]
    Argument {
        /// The kernel whose parameter refused the value.
        kernel: String,
        /// The graph parameter.
        label: String,
        /// The launch's own check.
        error: ArgError,
    },
    /// A capture is already open on this thread, or none is.
    #[error("{0}")]
    State(String),
}

/// A scalar's kind, as a parameter had it at capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    Bool,
    Int,
    Float,
    Complex,
}

impl ScalarKind {
    fn of(s: &Scalar) -> ScalarKind {
        match s {
            Scalar::Bool(_) => ScalarKind::Bool,
            Scalar::Int(_) => ScalarKind::Int,
            Scalar::Float(_) => ScalarKind::Float,
            Scalar::Complex(..) => ScalarKind::Complex,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ScalarKind::Bool => "bool",
            ScalarKind::Int => "int",
            ScalarKind::Float => "float",
            ScalarKind::Complex => "complex",
        }
    }
}

/// What a graph parameter (one value of the callable's flattened arguments) was at capture:
/// what a replay's value must match to update the captured kernels in place.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamSpec {
    /// A scalar: a replay gives a scalar of the same kind and source (a Python float stays a
    /// Python float, a NumPy float32 a NumPy float32).
    Scalar {
        kind: ScalarKind,
        source: ScalarSource,
    },
    /// A device array: a replay gives one of the same dtype, shape, strides and device.
    Array {
        dtype: String,
        shape: Vec<i64>,
        strides: Vec<i64>,
        device: i32,
    },
    /// A `CudaStruct` value of this struct.
    Struct { name: String },
    /// Anything else (a host array, an object): a replay cannot change it.
    Fixed { type_name: String },
}

fn describe_scalar(kind: ScalarKind, source: &ScalarSource) -> String {
    match source {
        ScalarSource::Python => format!("a Python {}", kind.name()),
        ScalarSource::NumPy(d) => format!("a NumPy {}", d.name()),
    }
}

fn dtype_name(d: &Result<DType, &str>) -> String {
    match d {
        Ok(d) => d.name().to_string(),
        Err(name) => (*name).to_string(),
    }
}

impl ParamSpec {
    /// The spec of a value as the binding read it at capture.
    pub fn of(arg: &Arg<'_>) -> ParamSpec {
        match arg {
            Arg::Scalar(s, source) => ParamSpec::Scalar {
                kind: ScalarKind::of(s),
                source: *source,
            },
            Arg::DeviceArray(a) => ParamSpec::Array {
                dtype: dtype_name(&a.dtype),
                shape: a.shape.to_vec(),
                strides: a.strides.to_vec(),
                device: a.device,
            },
            Arg::Struct { name, .. } => ParamSpec::Struct {
                name: (*name).to_string(),
            },
            Arg::HostArray { type_name } | Arg::Other { type_name } => ParamSpec::Fixed {
                type_name: (*type_name).to_string(),
            },
            // a NULL pointer stays NULL in every replay
            Arg::Null => ParamSpec::Fixed {
                type_name: "None".to_string(),
            },
        }
    }

    /// What the parameter was, in words.
    pub fn describe(&self) -> String {
        match self {
            ParamSpec::Scalar { kind, source } => describe_scalar(*kind, source),
            ParamSpec::Array {
                dtype,
                shape,
                device,
                ..
            } => format!("a {dtype} array of shape {shape:?} on device {device}"),
            ParamSpec::Struct { name } => format!("a {name} struct value"),
            ParamSpec::Fixed { type_name } => format!("a {type_name}"),
        }
    }

    /// Whether a replay can update kernels with a new value of this parameter.
    pub fn updatable(&self) -> bool {
        !matches!(self, ParamSpec::Fixed { .. })
    }

    /// Checks a replay's value against what the parameter was at capture; the error is the
    /// reason a re-capture is needed.
    pub fn check(&self, arg: &Arg<'_>) -> Result<(), String> {
        let given = ParamSpec::of(arg);
        match (self, &given) {
            (ParamSpec::Fixed { type_name }, _) => Err(format!(
                "was a {type_name} at capture, which a replay cannot change"
            )),
            (a, b) if a == b => Ok(()),
            (
                ParamSpec::Array {
                    dtype,
                    shape,
                    strides,
                    device,
                },
                ParamSpec::Array {
                    dtype: d2,
                    shape: s2,
                    strides: st2,
                    device: dev2,
                },
            ) => {
                let what = if dtype != d2 {
                    format!("dtype {dtype} at capture, {d2} now")
                } else if shape != s2 {
                    format!("shape {shape:?} at capture, {s2:?} now")
                } else if device != dev2 {
                    format!("device {device} at capture, device {dev2} now")
                } else {
                    format!("strides {strides:?} at capture, {st2:?} now")
                };
                Err(format!(
                    "a replay's array must match the captured one: {what}"
                ))
            }
            (expected, _) => Err(format!(
                "was {} at capture, got {}",
                expected.describe(),
                given.describe()
            )),
        }
    }
}

/// The bytes an array can reach, `[lowest, end)`, from its data pointer, shape and byte
/// strides (negative strides included); None for an empty array.
pub fn byte_span(ptr: u64, shape: &[i64], strides: &[i64], itemsize: usize) -> Option<(u64, u64)> {
    if shape.iter().any(|&n| n <= 0) {
        return None;
    }
    let (mut low, mut high) = (0i128, 0i128);
    for (i, &n) in shape.iter().enumerate() {
        let stride = i128::from(strides.get(i).copied().unwrap_or(0));
        let reach = stride * i128::from(n - 1);
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    let start = i128::from(ptr) + low;
    let end = i128::from(ptr) + high + itemsize as i128;
    Some((u64::try_from(start).ok()?, u64::try_from(end).ok()?))
}

/// Whether two spans share a byte.
pub fn spans_overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Where a recorded launch runs.
#[derive(Clone)]
pub enum Target {
    /// On the emulated device: the emulation library and each parameter's byte bound.
    Emulated {
        library: Arc<EmuLibrary>,
        options: LaunchOptions,
    },
    /// On a GPU: the kernel, and the node the launch became in the captured graph.
    Cuda { function: Function, node: usize },
    /// Nowhere (tests of the parameter logic, which never run a launch).
    #[cfg(test)]
    Nowhere,
}

/// A kernel parameter that is a graph parameter: parameter `slot` of the kernel's
/// signature takes graph parameter `param` (an index into the flattened parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub slot: usize,
    pub param: usize,
}

/// One launch of the captured step.
#[derive(Clone)]
pub struct RecordedLaunch {
    /// The kernel's name (for messages).
    pub name: String,
    /// The user's `file:line` of the call.
    pub site: String,
    pub shape: LaunchShape,
    pub shared: u32,
    /// The checked and packed parameters (updated in place by a replay's new values).
    pub buffer: LaunchBuffer,
    pub target: Target,
    /// Its parameters that are graph parameters.
    pub bindings: Vec<Binding>,
    /// The kernel's argument plan (how a bound parameter is checked and packed); None for a
    /// launch no graph parameter reaches.
    pub plan: Option<Arc<ArgPlan>>,
}

struct Capture {
    device: Device,
    /// The capturing stream (0 on the emulated device).
    stream: usize,
    launches: Vec<RecordedLaunch>,
    /// Parameters a replay cannot change, and why (one sets a launch shape).
    fixed: Vec<(usize, String)>,
}

thread_local! {
    static CAPTURE: RefCell<Option<Capture>> = const { RefCell::new(None) };
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
}

/// Whether a capture is open on the calling thread (one thread-local read).
#[inline]
pub fn capturing() -> bool {
    CAPTURING.with(Cell::get)
}

/// Opens a capture on the calling thread for `device`; on a GPU `stream` is the stream
/// being captured (launches on any other stream are refused).
pub fn begin(device: Device, stream: usize) -> Result<(), GraphError> {
    CAPTURE.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_some() {
            return Err(GraphError::State(
                "a graph is being captured on this thread already; graphs do not nest".into(),
            ));
        }
        *c = Some(Capture {
            device,
            stream,
            launches: Vec::new(),
            fixed: Vec::new(),
        });
        CAPTURING.with(|f| f.set(true));
        Ok(())
    })
}

/// What a capture recorded.
pub struct Recording {
    pub device: Device,
    pub launches: Vec<RecordedLaunch>,
    /// Parameters a replay cannot change, and why.
    pub fixed: Vec<(usize, String)>,
}

/// Closes the calling thread's capture and returns what it recorded (None when none was
/// open).
pub fn finish() -> Option<Recording> {
    CAPTURING.with(|f| f.set(false));
    CAPTURE.with(|c| c.borrow_mut().take()).map(|c| Recording {
        device: c.device,
        launches: c.launches,
        fixed: c.fixed,
    })
}

/// Marks graph parameter `param` as one a replay cannot change, because `why` (e.g. it is
/// the launch shape of a kernel: a replay updates arguments, never grids).
pub fn fix_param(param: usize, why: String) {
    CAPTURE.with(|c| {
        if let Some(capture) = c.borrow_mut().as_mut() {
            capture.fixed.push((param, why));
        }
    });
}

/// The stream the calling thread captures on (None without a capture).
pub fn capture_stream() -> Option<usize> {
    CAPTURE.with(|c| c.borrow().as_ref().map(|c| c.stream))
}

/// A refusal of `what` at `site` while capturing (the caller raises it).
pub fn refuse(what: &str, site: &str, why: &str) -> GraphError {
    GraphError::NotCapturable {
        what: what.to_string(),
        site: site.to_string(),
        why: why.to_string(),
    }
}

/// Checks, before a GPU launch of `name` during a capture, that it goes to the capturing
/// stream and that the capture is still valid.
pub fn check_cuda_launch(name: &str, site: &str, stream: StreamHandle) -> Result<(), RuntimeError> {
    let Some(capturing) = capture_stream() else {
        return Ok(());
    };
    if stream.raw() != capturing {
        return Err(refuse(
            &format!("kernel '{name}'"),
            site,
            &format!(
                "it launches on stream {:#x}, not on the stream being captured ({capturing:#x}); \
                 leave stream= out inside a captured step",
                stream.raw()
            ),
        )
        .into());
    }
    let driver = Driver::get().map_err(|e| RuntimeError::cuda(name, e))?;
    let info = driver
        .capture_info(stream)
        .map_err(|e| RuntimeError::cuda(name, e))?;
    if !info.active {
        return Err(refuse(
            &format!("kernel '{name}'"),
            site,
            "the capture was invalidated by an earlier operation of the step (a host \
             synchronization or a copy through host memory, made outside cunumpy)",
        )
        .into());
    }
    Ok(())
}

fn push(launch: RecordedLaunch) -> Result<(), RuntimeError> {
    CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(capture) => {
            capture.launches.push(launch);
            Ok(())
        }
        None => Err(RuntimeError::Internal(
            "a launch was recorded without an open capture",
        )),
    })
}

/// What every recorded launch has, whatever the device.
pub struct LaunchRecord {
    pub name: String,
    pub site: String,
    pub shape: LaunchShape,
    pub shared: u32,
    pub buffer: LaunchBuffer,
    pub bindings: Vec<Binding>,
    pub plan: Option<Arc<ArgPlan>>,
}

impl LaunchRecord {
    fn with(self, target: Target) -> RecordedLaunch {
        RecordedLaunch {
            name: self.name,
            site: self.site,
            shape: self.shape,
            shared: self.shared,
            buffer: self.buffer,
            target,
            bindings: self.bindings,
            plan: self.plan,
        }
    }
}

/// Records a launch on the emulated device (instead of running it): it runs at each replay.
/// Its shape is checked against the device's limits now, as a launch would be.
pub fn record_emulated(
    launch: LaunchRecord,
    library: Arc<EmuLibrary>,
    options: LaunchOptions,
) -> Result<(), RuntimeError> {
    emulated::validate(&launch.name, &launch.shape, launch.shared)?;
    push(launch.with(Target::Emulated { library, options }))
}

/// Records a launch just made on the capturing `stream`: the node it became is the one the
/// stream's next operation depends on.
pub fn record_cuda(
    launch: LaunchRecord,
    function: Function,
    stream: StreamHandle,
) -> Result<(), RuntimeError> {
    let driver = Driver::get().map_err(|e| RuntimeError::cuda(&launch.name, e))?;
    let info = driver
        .capture_info(stream)
        .map_err(|e| RuntimeError::cuda(&launch.name, e))?;
    let node = match info.last_nodes.as_slice() {
        [node] if info.active => *node,
        _ => {
            return Err(refuse(
                &format!("kernel '{}'", launch.name),
                &launch.site,
                "the driver reports no single node for the launch just captured (was the \
                 capture invalidated?)",
            )
            .into())
        }
    };
    push(launch.with(Target::Cuda { function, node }))
}

/// A captured step: its launches in order and its parameters.
pub struct Graph {
    device: Device,
    launches: Vec<RecordedLaunch>,
    params: Vec<ParamSpec>,
    fixed: Vec<(usize, String)>,
    /// The instantiated graph on a GPU (CuPy's `Graph.graphExec`); 0 on the emulated device.
    exec: usize,
    /// Launches whose parameters changed since the nodes were last updated.
    dirty: Vec<bool>,
}

impl Graph {
    /// The graph of a finished capture with the parameters' specs at capture.
    pub fn new(recording: Recording, params: Vec<ParamSpec>) -> Graph {
        let dirty = vec![false; recording.launches.len()];
        Graph {
            device: recording.device,
            launches: recording.launches,
            params,
            fixed: recording.fixed,
            exec: 0,
            dirty,
        }
    }

    /// The device it runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Sets the instantiated graph whose nodes a replay updates (GPU only).
    pub fn set_exec(&mut self, exec: usize) {
        self.exec = exec;
    }

    /// The recorded launches, in order.
    pub fn launches(&self) -> &[RecordedLaunch] {
        &self.launches
    }

    /// The number of kernels one replay runs.
    pub fn kernels(&self) -> usize {
        self.launches.len()
    }

    /// The parameters' specs at capture.
    pub fn params(&self) -> &[ParamSpec] {
        &self.params
    }

    /// Why a replay cannot change parameter `param` (it sets a launch shape), if so.
    pub fn fixed_reason(&self, param: usize) -> Option<&str> {
        self.fixed
            .iter()
            .find(|(p, _)| *p == param)
            .map(|(_, why)| why.as_str())
    }

    /// Whether parameter `param` reaches some kernel.
    pub fn is_bound(&self, param: usize) -> bool {
        self.launches
            .iter()
            .any(|l| l.bindings.iter().any(|b| b.param == param))
    }

    /// Takes a replay's new values, `(parameter, label, value)` each: every value is checked
    /// against its parameter's capture, then packed into every kernel parameter it is bound
    /// to as a launch packs it. All or nothing: when one value is refused, no launch changes.
    pub fn update(&mut self, updates: &[(usize, &str, Arg<'_>)]) -> Result<(), GraphError> {
        let ordinal = self.device.ordinal();
        // the launches' buffers as the updates leave them, copied on first change
        let mut staged: Vec<Option<LaunchBuffer>> = vec![None; self.launches.len()];
        for (param, label, arg) in updates {
            let spec = self.params.get(*param).ok_or_else(|| {
                GraphError::State(format!(
                    "the graph has {} parameter value(s), no {label}",
                    self.params.len()
                ))
            })?;
            spec.check(arg).map_err(|reason| GraphError::Recapture {
                label: (*label).to_string(),
                reason,
            })?;
            if let Some((_, why)) = self.fixed.iter().find(|(p, _)| p == param) {
                return Err(GraphError::Recapture {
                    label: (*label).to_string(),
                    reason: format!(
                        "{why}, which a replay cannot recompute (it writes new values into \
                         kernel arguments only)"
                    ),
                });
            }
            for (l, stage) in self.launches.iter().zip(staged.iter_mut()) {
                let mut slots = l
                    .bindings
                    .iter()
                    .filter(|b| b.param == *param)
                    .map(|b| b.slot)
                    .peekable();
                if slots.peek().is_none() {
                    continue;
                }
                let Some(plan) = &l.plan else {
                    return Err(GraphError::State(format!(
                        "internal: kernel '{}' takes {label} but has no argument plan",
                        l.name
                    )));
                };
                let buffer = stage.get_or_insert_with(|| l.buffer.clone());
                for slot in slots {
                    plan.pack(slot, arg, ordinal, buffer).map_err(|error| {
                        GraphError::Argument {
                            kernel: l.name.clone(),
                            label: (*label).to_string(),
                            error,
                        }
                    })?;
                }
            }
        }
        let launches = self.launches.iter_mut().zip(self.dirty.iter_mut());
        for ((l, dirty), stage) in launches.zip(staged) {
            if let Some(buffer) = stage {
                l.buffer = buffer;
                *dirty = true;
            }
        }
        Ok(())
    }

    /// On a GPU: writes every changed launch's parameters into its node of the instantiated
    /// graph. Returns how many nodes were updated. Nothing to do on the emulated device,
    /// whose replay reads the recorded buffers.
    ///
    /// # Safety
    /// The instantiated graph set with [`Graph::set_exec`] is alive and was instantiated from
    /// the captured graph these launches' nodes belong to; every device pointer in the
    /// launches' buffers stays valid for every later launch of it.
    pub unsafe fn apply_updates(&mut self) -> Result<usize, RuntimeError> {
        if matches!(self.device, Device::Emulated) {
            self.dirty.iter_mut().for_each(|d| *d = false);
            return Ok(0);
        }
        if self.exec == 0 && self.dirty.iter().any(|d| *d) {
            return Err(GraphError::State(
                "a replay changed kernel arguments but the instantiated graph is unknown \
                 (CuPy's Graph has no graphExec handle); capture the graph again for each value"
                    .into(),
            )
            .into());
        }
        let mut updated = 0;
        for (l, dirty) in self.launches.iter_mut().zip(self.dirty.iter_mut()) {
            if !*dirty {
                continue;
            }
            if let Target::Cuda { function, node } = &l.target {
                let driver = Driver::get().map_err(|e| RuntimeError::cuda(&l.name, e))?;
                // SAFETY: the caller guarantees `exec` and the pointers; `node` is this
                // launch's node of the captured graph, a kernel node of `function`, and the
                // buffer was packed for `function`'s parameters by its argument plan.
                unsafe {
                    driver.set_graph_kernel_params(
                        self.exec,
                        *node,
                        function,
                        &l.shape,
                        l.shared,
                        l.buffer.params(),
                    )
                }
                .map_err(|e| RuntimeError::cuda(&l.name, e))?;
                updated += 1;
            }
            *dirty = false;
        }
        Ok(updated)
    }

    /// On the emulated device: runs every recorded launch, in order, with its recorded
    /// (or updated) parameters. Blocks: call it without holding any interpreter lock.
    ///
    /// # Safety
    /// Every pointer value in the launches' buffers is the host address of memory that is
    /// alive and untouched by others for the call, with the byte length recorded as its bound.
    pub unsafe fn replay_emulated(&mut self) -> Result<(), RuntimeError> {
        for l in &mut self.launches {
            let Target::Emulated { library, options } = &l.target else {
                return Err(RuntimeError::Internal(
                    "a GPU graph's launch replayed on the emulated device",
                ));
            };
            // SAFETY: the buffer was checked and packed for this kernel (at capture, or by
            // `update` with the same argument plan); the caller guarantees the pointers.
            unsafe {
                emulated::run(
                    &l.name,
                    library,
                    l.buffer.params(),
                    &l.shape,
                    l.shared,
                    options,
                )
            }?;
        }
        Ok(())
    }

    /// The ledger entry of one replay: one graph launch running [`Graph::kernels`] kernels,
    /// made at `site`.
    pub fn record_replay(&self, name: &str, site: String) {
        Ledger::global().record(Event {
            kind: EventKind::GraphLaunch,
            description: format!("graph '{name}' replay: {} kernel(s)", self.kernels()),
            site,
            nbytes: None,
            blocking: false,
            implicit: false,
            time_ns: 0,
            thread: 0,
            kernels: self.kernels() as u64,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cunumpy_core::args::DeviceArray;

    fn array<'a>(dtype: DType, shape: &'a [i64], strides: &'a [i64], ptr: u64) -> Arg<'a> {
        Arg::DeviceArray(DeviceArray {
            ptr,
            dtype: Ok(dtype),
            shape,
            strides,
            c_contiguous: true,
            device: 0,
        })
    }

    #[test]
    fn spans_cover_views_with_any_strides() {
        // a (4, 3) float64 array at 1000: 96 bytes
        assert_eq!(byte_span(1000, &[4, 3], &[24, 8], 8), Some((1000, 1096)));
        // its transpose, and a reversed view starting at the last row
        assert_eq!(byte_span(1000, &[3, 4], &[8, 24], 8), Some((1000, 1096)));
        assert_eq!(byte_span(1072, &[4], &[-24], 8), Some((1000, 1080)));
        assert_eq!(byte_span(1000, &[0, 3], &[24, 8], 8), None);
        let whole = (1000, 1096);
        assert!(spans_overlap(whole, (1088, 1200)));
        assert!(!spans_overlap(whole, (1096, 1200)));
        assert!(!spans_overlap(whole, (900, 1000)));
    }

    #[test]
    fn a_scalar_parameter_keeps_its_kind() {
        let spec = ParamSpec::of(&Arg::Scalar(Scalar::Float(0.5), ScalarSource::Python));
        assert!(spec
            .check(&Arg::Scalar(Scalar::Float(2.0), ScalarSource::Python))
            .is_ok());
        let int = spec
            .check(&Arg::Scalar(Scalar::Int(2), ScalarSource::Python))
            .expect_err("refused");
        assert!(
            int.contains("Python float") && int.contains("Python int"),
            "{int}"
        );
        let np = spec
            .check(&Arg::Scalar(
                Scalar::Float(2.0),
                ScalarSource::NumPy(DType::Float32),
            ))
            .expect_err("refused");
        assert!(np.contains("NumPy float32"), "{np}");
    }

    #[test]
    fn an_array_parameter_keeps_dtype_shape_and_strides() {
        let spec = ParamSpec::of(&array(DType::Float64, &[4, 2], &[16, 8], 64));
        assert!(spec
            .check(&array(DType::Float64, &[4, 2], &[16, 8], 4096))
            .is_ok());
        let shape = spec
            .check(&array(DType::Float64, &[2, 4], &[32, 8], 64))
            .expect_err("refused");
        assert!(
            shape.contains("[4, 2]") && shape.contains("[2, 4]"),
            "{shape}"
        );
        let dtype = spec
            .check(&array(DType::Float32, &[4, 2], &[8, 4], 64))
            .expect_err("refused");
        assert!(
            dtype.contains("float64") && dtype.contains("float32"),
            "{dtype}"
        );
        let scalar = spec
            .check(&Arg::Scalar(Scalar::Float(1.0), ScalarSource::Python))
            .expect_err("refused");
        assert!(
            scalar.contains("array") && scalar.contains("Python float"),
            "{scalar}"
        );
    }

    #[test]
    fn a_fixed_parameter_always_asks_for_a_recapture() {
        let spec = ParamSpec::of(&Arg::Other { type_name: "list" });
        assert!(!spec.updatable());
        assert!(spec
            .check(&Arg::Other { type_name: "list" })
            .expect_err("refused")
            .contains("cannot change"));
    }

    #[test]
    fn captures_do_not_nest_and_finish_closes() {
        assert!(!capturing());
        assert!(begin(Device::Emulated, 0).is_ok());
        assert!(capturing());
        assert!(matches!(
            begin(Device::Emulated, 0),
            Err(GraphError::State(_))
        ));
        fix_param(0, "it is a launch shape".into());
        let recording = finish().expect("the open capture");
        assert_eq!(recording.device, Device::Emulated);
        assert!(recording.launches.is_empty());
        assert_eq!(
            recording.fixed,
            vec![(0, "it is a launch shape".to_string())]
        );
        let mut graph = Graph::new(
            recording,
            vec![ParamSpec::of(&Arg::Scalar(
                Scalar::Int(8),
                ScalarSource::Python,
            ))],
        );
        let refused = graph.update(&[(
            0,
            "parameter 0 (n)",
            Arg::Scalar(Scalar::Int(9), ScalarSource::Python),
        )]);
        match refused {
            Err(GraphError::Recapture { reason, .. }) => {
                assert!(reason.contains("launch shape") && reason.contains("recompute"))
            }
            other => panic!("{other:?}"),
        }
        assert!(!capturing());
        assert!(finish().is_none());
    }

    #[test]
    fn an_update_packs_bound_slots_as_a_launch_and_refuses_without_change() {
        use cunumpy_core::parser::parse_signature;
        let source = "extern \"C\" __global__ void k(double* x, double dt, int n) {}";
        let signature = parse_signature(source, "k", &[], None).expect("signature");
        let plan = Arc::new(ArgPlan::new(&signature, &|_| None).expect("plan"));
        let mut buffer = plan.new_buffer();
        let x = array(DType::Float64, &[8], &[8], 4096);
        plan.pack(0, &x, 0, &mut buffer).expect("x");
        let dt = Arg::Scalar(Scalar::Float(0.1), ScalarSource::Python);
        plan.pack(1, &dt, 0, &mut buffer).expect("dt");
        let n = Arg::Scalar(Scalar::Int(8), ScalarSource::Python);
        plan.pack(2, &n, 0, &mut buffer).expect("n");
        // a launch on "no device": its target is never run by this test
        let launch = RecordedLaunch {
            name: "k".into(),
            site: "step.py:3".into(),
            shape: LaunchShape {
                grid: [1, 1, 1],
                block: [8, 1, 1],
            },
            shared: 0,
            buffer,
            target: Target::Nowhere,
            bindings: vec![Binding { slot: 1, param: 0 }, Binding { slot: 0, param: 1 }],
            plan: Some(plan.clone()),
        };
        let recording = Recording {
            device: Device::Emulated,
            launches: vec![launch],
            fixed: Vec::new(),
        };
        let mut graph = Graph::new(recording, vec![ParamSpec::of(&dt), ParamSpec::of(&x)]);
        assert!(graph.is_bound(0) && graph.is_bound(1));
        let dt2 = Arg::Scalar(Scalar::Float(0.25), ScalarSource::Python);
        graph
            .update(&[(0, "parameter 0 (dt)", dt2)])
            .expect("same kind");
        let bytes = graph.launches()[0].buffer.bytes_of(&plan, 1);
        assert_eq!(bytes, 0.25f64.to_le_bytes());
        let x2 = array(DType::Float64, &[8], &[8], 8192);
        graph
            .update(&[(1, "parameter 1 (x)", x2)])
            .expect("same shape");
        assert_eq!(
            graph.launches()[0].buffer.bytes_of(&plan, 0),
            8192u64.to_le_bytes()
        );
        // a value of another kind asks for a re-capture and changes nothing
        let again = graph.update(&[(0, "parameter 0 (dt)", n)]);
        assert!(
            matches!(again, Err(GraphError::Recapture { .. })),
            "{again:?}"
        );
        assert_eq!(
            graph.launches()[0].buffer.bytes_of(&plan, 1),
            0.25f64.to_le_bytes()
        );
        // the kernel's own check still runs after the spec check passed (a non-contiguous
        // array of the captured shape and strides is refused as a launch refuses it)
        let mut other = x2;
        if let Arg::DeviceArray(a) = &mut other {
            a.c_contiguous = false;
        }
        let refused = graph.update(&[(1, "parameter 1 (x)", other)]);
        assert!(
            matches!(refused, Err(GraphError::Argument { .. })),
            "{refused:?}"
        );
        assert_eq!(
            graph.launches()[0].buffer.bytes_of(&plan, 0),
            8192u64.to_le_bytes()
        );
        // all or nothing: a good dt with a refused x changes neither
        let dt3 = Arg::Scalar(Scalar::Float(9.0), ScalarSource::Python);
        let both = graph.update(&[(0, "parameter 0 (dt)", dt3), (1, "parameter 1 (x)", other)]);
        assert!(both.is_err());
        assert_eq!(
            graph.launches()[0].buffer.bytes_of(&plan, 1),
            0.25f64.to_le_bytes()
        );
        // two parameters of one launch both land
        let x4 = array(DType::Float64, &[8], &[8], 16384);
        graph
            .update(&[(0, "parameter 0 (dt)", dt3), (1, "parameter 1 (x)", x4)])
            .expect("both");
        assert_eq!(
            graph.launches()[0].buffer.bytes_of(&plan, 1),
            9.0f64.to_le_bytes()
        );
        assert_eq!(
            graph.launches()[0].buffer.bytes_of(&plan, 0),
            16384u64.to_le_bytes()
        );
    }
}
