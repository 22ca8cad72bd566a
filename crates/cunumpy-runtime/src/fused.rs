//! A fused plan on a device: the plan loaded for the device's SM count (CUDA source, launches,
//! workspace layout: `cunumpy_fusion::DevicePlan`), compiled and loaded once per device, the
//! packed parameters of its launches, and the loop that launches them in order (on a GPU or
//! on the emulated device).
//!
//! Everything this crate asks of `cunumpy-fusion` is here: `Plan::for_device`, the device
//! plan's source, launches (name, grid, block, shared bytes, parameters) and workspace size,
//! and each launch's signature and arguments (`launch_signature`, `launch_args`). The
//! launches are packed by core's `ArgPlan`, the packer of user kernels: one plan per launch,
//! made when the plan is loaded on a device.

use crate::emulated;
use crate::record;
use crate::{Device, RuntimeError};
use cunumpy_core::args::{ArgPlan, LaunchBuffer};
use cunumpy_core::launch::LaunchShape;
use cunumpy_core::sync::lock;
use cunumpy_cuda::{CudaError, Function, Module, StreamHandle};
use cunumpy_emu::{EmuLibrary, LaunchOptions};
use cunumpy_fusion::{
    launch_args, launch_signature, DevicePlan, DevicePointers, DeviceTarget, HostLoopCache, Launch,
    ParamValue, Plan, ScalarValue,
};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A plan's kernels compiled and loaded on one CUDA device.
pub struct LoadedPlan {
    device: i32,
    /// The plan's source, launches and workspace layout for this device's SM count.
    on_device: Arc<DevicePlan>,
    /// One per launch of the plan, in launch order.
    functions: Vec<Function>,
    /// The packer of each launch, in launch order.
    packers: Vec<ArgPlan>,
    _module: Module,
    from_cache: bool,
}

impl LoadedPlan {
    /// Whether the compiled image came from the disk cache.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// Bytes of the workspace a call needs on this device (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.on_device.workspace_bytes()
    }
}

/// A plan on the emulated device: the plan loaded for the emulated device's SM count, and the
/// emulation library of each launch (all built from its one source) with whether it came
/// from the disk cache.
pub struct EmulatedPlan {
    on_device: Arc<DevicePlan>,
    /// The packer of each launch, in launch order.
    packers: Vec<ArgPlan>,
    libraries: Vec<(Arc<EmuLibrary>, bool)>,
}

impl EmulatedPlan {
    /// Bytes of the workspace a call needs on the emulated device (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.on_device.workspace_bytes()
    }

    /// Whether every library came from the disk cache.
    pub fn from_cache(&self) -> bool {
        self.libraries.iter().all(|(_, hit)| *hit)
    }
}

/// The parameter buffers of a plan's launches and what they were packed from: a call with the
/// same device, pointers and scalars (a cached call writing into a recycled or the same
/// output) launches them again instead of packing every parameter anew.
struct PackedLaunches {
    device: i32,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    workspace: u64,
    scalars: Vec<ScalarValue>,
    buffers: Vec<LaunchBuffer>,
}

/// The byte length behind each array of a call on the emulated device, for its bounds checks.
#[derive(Debug, Clone, Copy)]
pub struct Extents<'a> {
    /// One per plan input.
    pub inputs: &'a [usize],
    /// One per plan output.
    pub outputs: &'a [usize],
    /// The workspace's (0 when there is none).
    pub workspace: usize,
}

/// A plan and what it is on each device it has run on.
pub struct FusedPlan {
    plan: Plan,
    /// The plan loaded for each device target seen so far (one per SM count).
    on_targets: Mutex<Vec<Arc<DevicePlan>>>,
    /// The compiled loops of the CPU executor for this plan.
    host_loops: HostLoopCache,
    loaded: Mutex<Vec<Arc<LoadedPlan>>>,
    emulated: Mutex<Option<Arc<EmulatedPlan>>>,
    packed: Mutex<Option<PackedLaunches>>,
}

/// The packer of every launch of `on_device`, in launch order.
fn packers(on_device: &DevicePlan) -> Result<Vec<ArgPlan>, RuntimeError> {
    on_device
        .launches()
        .map(|l| ArgPlan::new(&launch_signature(l), &|_| None).map_err(RuntimeError::from))
        .collect()
}

/// The parameter buffer of launch `l` for one call, packed by its `ArgPlan` exactly as a user
/// kernel's arguments are.
fn pack(
    on_device: &DevicePlan,
    l: &Launch,
    packer: &ArgPlan,
    ptrs: &DevicePointers<'_>,
    svs: &[ScalarValue],
    device: i32,
) -> Result<LaunchBuffer, RuntimeError> {
    let args = launch_args(on_device, l, ptrs, svs, device)?;
    packer.check_count(args.len())?;
    let mut buffer = packer.new_buffer();
    for (i, arg) in args.iter().enumerate() {
        packer.pack(i, arg, device, &mut buffer)?;
    }
    Ok(buffer)
}

fn launch_shape(l: &Launch) -> LaunchShape {
    LaunchShape {
        grid: [l.grid, 1, 1],
        block: [l.block, 1, 1],
    }
}

impl FusedPlan {
    /// A plan not yet loaded anywhere.
    pub fn new(plan: Plan) -> Self {
        FusedPlan {
            plan,
            on_targets: Mutex::new(Vec::new()),
            host_loops: HostLoopCache::new(),
            loaded: Mutex::new(Vec::new()),
            emulated: Mutex::new(None),
            packed: Mutex::new(None),
        }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The compiled loops of the CPU executor for this plan.
    pub fn host_loops(&self) -> &HostLoopCache {
        &self.host_loops
    }

    /// The plan's name (the fused function's).
    pub fn name(&self) -> &str {
        &self.plan.options.name
    }

    /// The plan loaded for `target` (made once per target).
    pub fn on_target(&self, target: DeviceTarget) -> Arc<DevicePlan> {
        if let Some(p) = lock(&self.on_targets).iter().find(|p| p.target == target) {
            return p.clone();
        }
        let made = Arc::new(self.plan.for_device(target));
        let mut all = lock(&self.on_targets);
        if let Some(p) = all.iter().find(|p| p.target == target) {
            return p.clone();
        }
        all.push(made.clone());
        made
    }

    /// The plan loaded for `device`'s SM count.
    pub fn on_device(&self, device: Device) -> Result<Arc<DevicePlan>, RuntimeError> {
        Ok(self.on_target(DeviceTarget::new(device.sm_count()?)))
    }

    /// The plan loaded for the device a launch would use now, for inspection (`explain`,
    /// the CUDA source, the launches): the emulated device when it is switched on, else the
    /// calling thread's CUDA device, else (no driver, no device) an H200. Fails only on an
    /// unusable setting (the emulated device's SM count).
    pub fn for_inspection(&self) -> Result<Arc<DevicePlan>, RuntimeError> {
        let Ok(device) = Device::current() else {
            return Ok(self.on_target(DeviceTarget::H200));
        };
        match self.on_device(device) {
            Ok(p) => Ok(p),
            Err(e @ RuntimeError::Setting(_)) => Err(e),
            Err(_) => Ok(self.on_target(DeviceTarget::H200)),
        }
    }

    /// The plan as loaded on CUDA device `device`, if it is.
    #[inline]
    pub fn loaded(&self, device: i32) -> Option<Arc<LoadedPlan>> {
        lock(&self.loaded)
            .iter()
            .find(|l| l.device == device)
            .cloned()
    }

    /// The plan loaded on CUDA device `device`: loaded for its SM count, compiled (or found
    /// in the disk cache) and loaded on first use. Blocks for the compile: call it without
    /// holding any interpreter lock.
    pub fn load(
        &self,
        device: i32,
        python_paths: &[PathBuf],
    ) -> Result<Arc<LoadedPlan>, RuntimeError> {
        if let Some(l) = self.loaded(device) {
            return Ok(l);
        }
        let on_device = self.on_device(Device::Cuda(device))?;
        let program = format!("{}.cu", self.name());
        let cuda = |e| RuntimeError::cuda(self.name(), e);
        let (module, compiled) = crate::kernel::compile_module(
            &on_device.source,
            &program,
            &[],
            &[],
            &[],
            device,
            python_paths,
        )
        .map_err(cuda)?;
        let functions = on_device
            .launches()
            .map(|l| module.function(&l.name))
            .collect::<Result<Vec<_>, CudaError>>()
            .map_err(cuda)?;
        let packers = packers(&on_device)?;
        let loaded = Arc::new(LoadedPlan {
            device,
            on_device,
            functions,
            packers,
            _module: module,
            from_cache: compiled.hit,
        });
        let mut all = lock(&self.loaded);
        if let Some(l) = all.iter().find(|l| l.device == device) {
            return Ok(l.clone());
        }
        all.push(loaded.clone());
        Ok(loaded)
    }

    /// The plan on the emulated device: loaded for its SM count (again when that setting
    /// changes) with the emulation library of every launch (built once, or found in this
    /// process's table or the disk cache). Blocks like [`FusedPlan::load`].
    pub fn emulated(&self) -> Result<Arc<EmulatedPlan>, RuntimeError> {
        let target = DeviceTarget::new(emulated::sm_count()?);
        if let Some(e) = lock(&self.emulated).as_ref() {
            if e.on_device.target == target {
                return Ok(e.clone());
            }
        }
        let on_device = self.on_target(target);
        // one library for the whole plan (every launch's launcher in it)
        let names: Vec<String> = on_device.launches().map(|l| l.name.clone()).collect();
        let what = format!("fused plan '{}' ({} launch(es))", self.name(), names.len());
        let libraries = emulated::module_for_source(&on_device.source, &names, &what)?;
        let packers = packers(&on_device)?;
        let plan = Arc::new(EmulatedPlan {
            on_device,
            packers,
            libraries,
        });
        *lock(&self.emulated) = Some(plan.clone());
        Ok(plan)
    }

    /// Compiles the plan for `device` (disk cache first); true when everything came from the
    /// disk cache. Blocks like [`FusedPlan::load`].
    pub fn compile(&self, device: Device, python_paths: &[PathBuf]) -> Result<bool, RuntimeError> {
        match device {
            Device::Cuda(d) => Ok(self.load(d, python_paths)?.from_cache),
            Device::Emulated => Ok(self.emulated()?.from_cache()),
        }
    }

    /// Whether the plan is compiled for `device`.
    pub fn is_compiled(&self, device: Device) -> bool {
        match device {
            Device::Cuda(d) => self.loaded(d).is_some(),
            Device::Emulated => lock(&self.emulated).is_some(),
        }
    }

    /// Launches every kernel of the plan, in order, on `stream`, with the arrays at `ptrs` and
    /// the scalars `svs`. The launches' parameters are packed before anything runs, and kept:
    /// a call with the same pointers and scalars launches the same buffers again. Each launch
    /// is a ledger event made at `site` (asked only while the ledger records).
    ///
    /// # Safety
    /// `loaded` is this plan loaded on the current context's device; the pointers are device
    /// addresses of C-contiguous arrays of the plan's shapes and dtypes on that device (the
    /// sizes the kernels index with), and the workspace holds at least
    /// `loaded.workspace_bytes()`, all staying allocated until the kernels finish; `stream`
    /// is a live stream of that context.
    pub unsafe fn launch(
        &self,
        loaded: &LoadedPlan,
        stream: StreamHandle,
        ptrs: &DevicePointers<'_>,
        svs: &[ScalarValue],
        site: &mut dyn FnMut() -> String,
    ) -> Result<(), RuntimeError> {
        let device = loaded.device;
        let on_device = &*loaded.on_device;
        let mut packed = lock(&self.packed);
        let same = packed.as_ref().is_some_and(|p| {
            p.device == device
                && p.inputs == ptrs.inputs
                && p.outputs == ptrs.outputs
                && p.workspace == ptrs.workspace
                && p.scalars == svs
        });
        if !same {
            // every launch's parameters, packed before anything runs
            let buffers = on_device
                .launches()
                .zip(&loaded.packers)
                .map(|(l, packer)| pack(on_device, l, packer, ptrs, svs, device))
                .collect::<Result<Vec<_>, _>>()?;
            *packed = Some(PackedLaunches {
                device,
                inputs: ptrs.inputs.to_vec(),
                outputs: ptrs.outputs.to_vec(),
                workspace: ptrs.workspace,
                scalars: svs.to_vec(),
                buffers,
            });
        }
        let Some(packed) = packed.as_mut() else {
            return Err(RuntimeError::Internal("no packed parameters"));
        };
        if packed.buffers.len() != loaded.functions.len() {
            return Err(RuntimeError::Internal(
                "the loaded module does not match the plan's launches",
            ));
        }
        let recording = record::recording();
        let capturing = crate::graph::capturing();
        let launches = on_device.launches().zip(&loaded.functions);
        for ((l, function), buffer) in launches.zip(packed.buffers.iter_mut()) {
            if l.grid == 0 {
                continue;
            }
            let shape = launch_shape(l);
            if capturing {
                crate::graph::check_cuda_launch(&l.name, &site(), stream)?;
            }
            // SAFETY: the buffer holds one value per parameter of this launch, of the C types
            // the generated kernel declares (its `ArgPlan` was built from the device plan's
            // parameter list, the same list the source was generated from), alive for the
            // call; a reused buffer was packed from equal pointers and scalars, so it holds
            // the bytes packing them now would give. The pointers, workspace and stream are
            // as the caller guarantees (see the contract above).
            unsafe { function.launch(&shape, l.shared_bytes, stream, buffer.params()) }
                .map_err(|e| RuntimeError::cuda(&l.name, e))?;
            if recording {
                record::launch(&l.name, &shape, site());
            }
            if capturing {
                let launch = crate::graph::LaunchRecord {
                    name: l.name.clone(),
                    site: site(),
                    shape,
                    shared: l.shared_bytes,
                    buffer: buffer.clone(),
                    bindings: Vec::new(),
                    plan: None,
                };
                crate::graph::record_cuda(launch, function.clone(), stream)?;
            }
        }
        Ok(())
    }

    /// [`FusedPlan::launch`] on the emulated device (`on_emulator`, from
    /// [`FusedPlan::emulated`]): each launch runs the generated CUDA C in the CPU emulator,
    /// in order, with every pointer parameter bounds-checked against the byte length of its
    /// array (or of the workspace). Blocks: call it without holding any interpreter lock.
    /// Each launch is a ledger event made at `site` (when given).
    ///
    /// # Safety
    /// The pointers are host addresses of C-contiguous arrays of the plan's shapes and dtypes
    /// whose byte lengths are `extents`, alive and untouched by others for the call.
    pub unsafe fn launch_emulated(
        &self,
        on_emulator: &EmulatedPlan,
        ptrs: &DevicePointers<'_>,
        extents: &Extents<'_>,
        svs: &[ScalarValue],
        site: Option<String>,
    ) -> Result<(), RuntimeError> {
        let on_device = &*on_emulator.on_device;
        let mut launches = Vec::new();
        for (l, packer) in on_device.launches().zip(&on_emulator.packers) {
            let buffer = pack(on_device, l, packer, ptrs, svs, Device::Emulated.ordinal())?;
            // the byte length behind each pointer parameter, for the emulator's checks
            let bounds: Vec<Option<usize>> = l
                .params
                .iter()
                .map(|p| match p.value {
                    ParamValue::Input(i) => extents.inputs.get(i).copied(),
                    ParamValue::Output(i) => extents.outputs.get(i).copied(),
                    ParamValue::Workspace { offset } => {
                        Some(extents.workspace.saturating_sub(offset))
                    }
                    ParamValue::Scalar(_) | ParamValue::Int(_) => None,
                })
                .collect();
            launches.push((l, buffer, bounds));
        }
        if on_emulator.libraries.len() != launches.len() {
            return Err(RuntimeError::Internal(
                "the emulation libraries do not match the plan's launches",
            ));
        }
        for ((lib, _), (l, mut buffer, bounds)) in on_emulator.libraries.iter().zip(launches) {
            if l.grid == 0 {
                continue;
            }
            let shape = launch_shape(l);
            let options = LaunchOptions {
                bounds: Some(bounds),
                ..LaunchOptions::default()
            };
            if crate::graph::capturing() {
                // recorded, not run: it runs at each replay of the graph
                let launch = crate::graph::LaunchRecord {
                    name: l.name.clone(),
                    site: site.clone().unwrap_or_default(),
                    shape,
                    shared: l.shared_bytes,
                    buffer,
                    bindings: Vec::new(),
                    plan: None,
                };
                crate::graph::record_emulated(launch, lib.clone(), options)?;
                continue;
            }
            // SAFETY: the buffer holds one value per parameter of this launch, of the C types
            // the generated kernel declares (its `ArgPlan` was built from the parameter list
            // the source was generated from). Pointer values are host addresses of arrays (and
            // the workspace) the caller keeps alive, and every pointer parameter's byte length
            // is passed as a bound, so an access outside it is caught rather than performed.
            unsafe {
                emulated::run(
                    &l.name,
                    lib,
                    buffer.params(),
                    &shape,
                    l.shared_bytes,
                    &options,
                )
            }?;
            if let Some(site) = &site {
                record::launch(&l.name, &shape, site.clone());
            }
        }
        Ok(())
    }
}
