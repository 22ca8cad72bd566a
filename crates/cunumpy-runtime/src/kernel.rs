//! A user's CUDA kernel on a device: compiled once per device (through the disk cache),
//! loaded, validated and launched.

use crate::emulated::{self, LibraryKey};
use crate::RuntimeError;
use cunumpy_core::args::{ArgError, ArgErrorKind};
use cunumpy_core::constants::{self, ConstantDecl, ConstantError, ConstantLayout};
use cunumpy_core::includes::resolve_includes;
use cunumpy_core::launch::{self, DeviceLimits, KernelLimits, LaunchShape};
use cunumpy_core::sync::lock;
use cunumpy_cuda::{
    compile_cached, CachedCompile, CompileRequest, CudaError, Driver, Function, KernelCache,
    Module, Nvrtc, StreamHandle,
};
use cunumpy_emu::{ConstantValues, EmuError, EmuLibrary, LaunchOptions};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What a kernel is compiled from.
#[derive(Debug, Clone)]
pub struct KernelSource {
    /// The kernel's name (in messages and the ledger).
    pub name: String,
    /// Its name expression (`name<T>` for a template instance).
    pub expression: String,
    /// The CUDA C source.
    pub source: String,
    /// The user's compile options.
    pub options: Vec<String>,
    /// The user's include folders.
    pub include_dirs: Vec<PathBuf>,
    /// The folder of the source file (searched first for quoted includes), if any.
    pub source_dir: Option<PathBuf>,
    /// The folder of cunumpy's shipped headers.
    pub shipped_dir: PathBuf,
    /// The most registers a thread may use: a kernel compiled to more is compiled again
    /// with `--maxrregcount` (see [`register_cap_option`]); `None`: as the compiler chose.
    pub max_registers: Option<u32>,
}

/// The option that caps a kernel compiled to `num_regs` registers a thread at `max`, or `None`
/// where it fits. Only a kernel above the cap gets it: ptxas takes a cap as its budget and
/// raises a kernel that needed fewer registers towards it, which costs that kernel occupancy.
pub fn register_cap_option(num_regs: u32, max: Option<u32>) -> Option<String> {
    max.filter(|&max| num_regs > max)
        .map(|max| format!("--maxrregcount={max}"))
}

/// A kernel: its source and what it is loaded as on each device it has run on.
pub struct Kernel {
    source: KernelSource,
    loaded: Mutex<Vec<Arc<LoadedKernel>>>,
    /// The values set into its `__constant__` variables: copied into each device's module
    /// when it is loaded (on the emulated device: into the library before each launch).
    constants: Arc<ConstantValues>,
    /// The `__constant__` variables its source declares (scanned on first use).
    constant_decls: OnceLock<Vec<ConstantDecl>>,
}

/// A kernel compiled and loaded for one CUDA device.
pub struct LoadedKernel {
    device: i32,
    module: Module,
    function: Function,
    kernel_limits: KernelLimits,
    device_limits: DeviceLimits,
    dynamic_shared_allowed: AtomicU32,
    from_cache: bool,
}

impl Kernel {
    /// A kernel not yet compiled anywhere.
    pub fn new(source: KernelSource) -> Self {
        Kernel {
            source,
            loaded: Mutex::new(Vec::new()),
            constants: Arc::new(ConstantValues::default()),
            constant_decls: OnceLock::new(),
        }
    }

    /// What the kernel is compiled from.
    pub fn source(&self) -> &KernelSource {
        &self.source
    }

    /// The kernel as loaded on CUDA device `device`, if it is.
    #[inline]
    pub fn loaded(&self, device: i32) -> Option<Arc<LoadedKernel>> {
        lock(&self.loaded)
            .iter()
            .find(|l| l.device == device)
            .cloned()
    }

    /// The kernel loaded on CUDA device `device`: compiled (or found in the disk cache) and
    /// loaded on first use. Blocks for the compile: call it without holding any interpreter
    /// lock. `python_paths` are where NVRTC's pip wheel may live.
    pub fn load(
        &self,
        device: i32,
        python_paths: &[PathBuf],
    ) -> Result<Arc<LoadedKernel>, CudaError> {
        if let Some(l) = self.loaded(device) {
            return Ok(l);
        }
        let loaded = Arc::new(compile_and_load(&self.source, device, python_paths)?);
        // the values set before (on other devices): this module's constant memory gets them too
        for (name, bytes) in self.constants.all() {
            if let Some(global) = loaded.module.global(&name)? {
                global.write(&bytes)?;
            }
        }
        let mut all = lock(&self.loaded);
        if let Some(l) = all.iter().find(|l| l.device == device) {
            return Ok(l.clone());
        }
        all.push(loaded.clone());
        Ok(loaded)
    }

    /// Any device's loaded kernel (the first loaded), for probes.
    pub fn any_loaded(&self) -> Option<Arc<LoadedKernel>> {
        lock(&self.loaded).first().cloned()
    }

    /// Drops what was loaded on `device`.
    pub fn forget(&self, device: i32) {
        lock(&self.loaded).retain(|l| l.device != device);
    }

    /// Whether the kernel is compiled for `device` (on the emulated device: whether this
    /// process has loaded its emulation library).
    pub fn is_compiled(&self, device: crate::Device) -> bool {
        match device {
            crate::Device::Cuda(d) => self.loaded(d).is_some(),
            crate::Device::Emulated => emulated::is_loaded(
                &self.source.source,
                &self.source.expression,
                &self.source.options,
            ),
        }
    }

    /// The kernel's emulation library (built or found in the disk cache on first use), and
    /// whether it came from the disk cache. Blocks like [`Kernel::load`].
    pub fn emulation_library(&self) -> Result<(Arc<EmuLibrary>, bool), EmuError> {
        emulated::library(self.library_key())
    }

    /// The `__constant__` variables the kernel's source declares at global scope.
    pub fn constant_decls(&self) -> &[ConstantDecl] {
        self.constant_decls
            .get_or_init(|| constants::constant_declarations(&self.source.source))
    }

    /// The values set into the kernel's `__constant__` variables (what an emulated launch
    /// copies into the library first).
    pub fn constant_values(&self) -> &Arc<ConstantValues> {
        &self.constants
    }

    /// Copies `bytes`, a value of dtype `dtype` (its NumPy name) with `count` elements, into
    /// the kernel's `__constant__` variable `name` on `device` (compiled and loaded first if
    /// needed), after checking it against the declaration: the declared C type's dtype and
    /// exactly the variable's element count. On a GPU the copy is made now (the context is
    /// synchronised around it); on the emulated device the value is kept and copied into the
    /// library before each launch of this kernel. Returns the variable's layout. Blocks like
    /// [`Kernel::load`].
    pub fn set_constant(
        &self,
        device: crate::Device,
        name: &str,
        dtype: &str,
        count: usize,
        bytes: &[u8],
        python_paths: &[PathBuf],
    ) -> Result<ConstantLayout, RuntimeError> {
        let kernel = &self.source.name;
        let decl = constants::find(kernel, self.constant_decls(), name)?;
        constants::check_settable(kernel, decl)?;
        match device {
            crate::Device::Cuda(d) => {
                let global = self.global(d, decl, python_paths)?;
                let layout =
                    constants::check_value(kernel, decl, global.len_bytes(), dtype, count)?;
                self.check_bytes(&layout, bytes)?;
                global
                    .write(bytes)
                    .map_err(|e| RuntimeError::cuda(kernel, e))?;
                self.constants.set(name, bytes.to_vec());
                Ok(layout)
            }
            crate::Device::Emulated => {
                let size = self.emulated_size(decl)?;
                let layout = constants::check_value(kernel, decl, size, dtype, count)?;
                self.check_bytes(&layout, bytes)?;
                self.constants.set(name, bytes.to_vec());
                Ok(layout)
            }
        }
    }

    /// The bytes of the kernel's `__constant__` variable `name` on `device` and its layout:
    /// read from the GPU's module (a copy to the host), or on the emulated device the value
    /// set, else the initialiser's.
    pub fn get_constant(
        &self,
        device: crate::Device,
        name: &str,
        python_paths: &[PathBuf],
    ) -> Result<(ConstantLayout, Vec<u8>), RuntimeError> {
        let kernel = &self.source.name;
        let decl = constants::find(kernel, self.constant_decls(), name)?;
        if decl.dtype.is_none() {
            constants::check_settable(kernel, decl)?; // names the unsupported type
        }
        match device {
            crate::Device::Cuda(d) => {
                let global = self.global(d, decl, python_paths)?;
                let layout = constants::layout(kernel, decl, global.len_bytes())?;
                let bytes = global.read().map_err(|e| RuntimeError::cuda(kernel, e))?;
                Ok((layout, bytes))
            }
            crate::Device::Emulated => {
                let (lib, _) = self.emulation_library()?;
                let initial = lib
                    .constant_initial(&decl.name)
                    .ok_or_else(|| ConstantError::Missing {
                        kernel: kernel.clone(),
                        name: decl.name.clone(),
                    })?
                    .to_vec();
                let layout = constants::layout(kernel, decl, initial.len())?;
                Ok((layout, self.constants.get(&decl.name).unwrap_or(initial)))
            }
        }
    }

    fn check_bytes(&self, layout: &ConstantLayout, bytes: &[u8]) -> Result<(), RuntimeError> {
        if bytes.len() == layout.bytes {
            Ok(())
        } else {
            Err(RuntimeError::Internal(
                "a __constant__ value's bytes do not match its checked element count",
            ))
        }
    }

    fn global(
        &self,
        device: i32,
        decl: &ConstantDecl,
        python_paths: &[PathBuf],
    ) -> Result<cunumpy_cuda::Global, RuntimeError> {
        let kernel = &self.source.name;
        let loaded = self
            .load(device, python_paths)
            .map_err(|e| RuntimeError::cuda(kernel, e))?;
        Driver::get()
            .and_then(|d| d.ensure_context(device))
            .map_err(|e| RuntimeError::cuda(kernel, e))?;
        loaded
            .module
            .global(&decl.name)
            .map_err(|e| RuntimeError::cuda(kernel, e))?
            .ok_or_else(|| {
                ConstantError::Missing {
                    kernel: kernel.clone(),
                    name: decl.name.clone(),
                }
                .into()
            })
    }

    fn emulated_size(&self, decl: &ConstantDecl) -> Result<usize, RuntimeError> {
        let (lib, _) = self.emulation_library()?;
        lib.constant_initial(&decl.name)
            .map(<[u8]>::len)
            .ok_or_else(|| {
                ConstantError::Missing {
                    kernel: self.source.name.clone(),
                    name: decl.name.clone(),
                }
                .into()
            })
    }

    /// The emulation build's key: the kernel's include folders, then the shipped one.
    pub fn library_key(&self) -> LibraryKey {
        let s = &self.source;
        let mut dirs = s.include_dirs.clone();
        if !dirs.contains(&s.shipped_dir) {
            dirs.push(s.shipped_dir.clone());
        }
        LibraryKey::new(
            s.source.clone(),
            s.expression.clone(),
            s.options.clone(),
            dirs,
        )
    }
}

/// A kernel's launch on the emulated device, prepared by [`Kernel::prepare_emulated`]: the
/// library it runs (the bounds-checked build when the checks ask for it and it compiles) and
/// the emulator's options.
pub struct EmulatedLaunch {
    pub library: Arc<EmuLibrary>,
    pub options: LaunchOptions,
}

impl Kernel {
    /// The steps of an emulated launch before it runs, in order: the shape and dynamic shared
    /// memory against the emulated device's limits; the emulation library (built, or found in
    /// the disk cache, on first use); the `given` argument count against the compiled kernel's
    /// parameters (fewer pass when the signature has `planned` parameters, the rest taking
    /// their C defaults); the build (bounds-checked when `checks.bounds` asks and it
    /// compiles); the options, with `extents` (each argument's byte length, for pointer
    /// parameters) as the bounds. Blocks for the build: call it without any interpreter lock.
    pub fn prepare_emulated(
        &self,
        given: usize,
        planned: Option<usize>,
        extents: Vec<Option<usize>>,
        shape: &LaunchShape,
        shared: u32,
        checks: emulated::Checks,
    ) -> Result<EmulatedLaunch, RuntimeError> {
        let name = &self.source.name;
        emulated::validate(name, shape, shared)?;
        let (library, _) = self.emulation_library()?;
        let expected = library.param_count();
        let with_defaults = planned == Some(expected) && given < expected;
        if given != expected && !with_defaults {
            return Err(RuntimeError::Argument(ArgError {
                kind: ArgErrorKind::Type,
                message: format!("{name}() takes {expected} arguments, got {given}"),
            }));
        }
        let checked = emulated::use_checked_build(&library, checks.bounds, checks.shuffle_seed);
        let options = LaunchOptions {
            bounds: checked.then_some(extents),
            shuffle_seed: checks.shuffle_seed,
            detect_races: checks.detect_races && checked,
            constants: Some(self.constants.clone()),
            ..LaunchOptions::default()
        };
        Ok(EmulatedLaunch { library, options })
    }
}

impl EmulatedLaunch {
    /// Runs the launch of kernel `name` in the emulator (validated against the device's
    /// limits, then run to completion) and, when `site` is given, records it in the ledger.
    /// Blocks: call it without any interpreter lock.
    ///
    /// # Safety
    /// As [`emulated::run`]: `params` holds one value per parameter of the compiled kernel,
    /// of its C type, alive for the call; pointer values are host addresses of memory alive
    /// and untouched by others for the call, large enough for every access unless the options
    /// carry each pointer parameter's byte length.
    pub unsafe fn run(
        &self,
        name: &str,
        params: *mut *mut c_void,
        shape: &LaunchShape,
        shared: u32,
        site: Option<String>,
    ) -> Result<(), RuntimeError> {
        // SAFETY: the caller upholds `emulated::run`'s contract (above).
        unsafe { emulated::run(name, &self.library, params, shape, shared, &self.options) }?;
        if let Some(site) = site {
            crate::record::launch(name, shape, site);
        }
        Ok(())
    }
}

impl LoadedKernel {
    /// The CUDA device it is loaded on.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// Whether the compiled image came from the disk cache.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// The loaded function.
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Readies a launch of `name` with `shape` and `shared` bytes of dynamic shared memory:
    /// checks both against the device's and the kernel's limits, and raises the kernel's
    /// dynamic shared memory allowance when the launch needs more.
    #[inline]
    pub fn prepare(
        &self,
        name: &str,
        shape: &LaunchShape,
        shared: u32,
    ) -> Result<(), RuntimeError> {
        launch::validate(
            name,
            shape,
            shared,
            &self.device_limits,
            &self.kernel_limits,
        )?;
        if shared > self.dynamic_shared_allowed.load(Ordering::Relaxed) {
            self.function
                .set_max_dynamic_shared(shared)
                .map_err(|e| RuntimeError::cuda(name, e))?;
            self.dynamic_shared_allowed.store(shared, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Queues one launch on `stream`.
    ///
    /// # Safety
    /// As for [`Function::launch`]: `params` was packed for this kernel's parameters (core
    /// `ArgPlan`) from arguments alive until the kernel finishes, the device's context is
    /// current, and `shape`/`shared` passed [`LoadedKernel::prepare`] (or were launched
    /// before).
    #[inline]
    pub unsafe fn launch(
        &self,
        shape: &LaunchShape,
        shared: u32,
        stream: StreamHandle,
        params: *mut *mut c_void,
    ) -> Result<(), CudaError> {
        // SAFETY: the caller upholds `Function::launch`'s contract.
        unsafe { self.function.launch(shape, shared, stream, params) }
    }
}

/// Compiles `source` for `device` through NVRTC and the disk cache (a hit skips NVRTC), and
/// loads the image in the device's primary context. Shared by user kernels and fused plans.
pub fn compile_module(
    source: &str,
    program_name: &str,
    options: &[String],
    name_expressions: &[String],
    headers: &[PathBuf],
    device: i32,
    python_paths: &[PathBuf],
) -> Result<(Module, CachedCompile), CudaError> {
    let start = std::time::Instant::now();
    let compiled = compile_module_timed(
        source,
        program_name,
        options,
        name_expressions,
        headers,
        device,
        python_paths,
    );
    crate::count_compile_time(start);
    compiled
}

fn compile_module_timed(
    source: &str,
    program_name: &str,
    options: &[String],
    name_expressions: &[String],
    headers: &[PathBuf],
    device: i32,
    python_paths: &[PathBuf],
) -> Result<(Module, CachedCompile), CudaError> {
    let driver = Driver::get()?;
    driver.ensure_context(device)?;
    let info = driver.device_info(device)?;
    let nvrtc = Nvrtc::get_or_load(python_paths)?;
    let cache = KernelCache::at_default_dir();
    let compiled = compile_cached(
        nvrtc,
        cache.as_ref(),
        &CompileRequest {
            source,
            program_name,
            options,
            name_expressions,
            headers,
            arch: info.compute_capability,
        },
    )?;
    let module = Module::load(&compiled.compiled.image)?;
    Ok((module, compiled))
}

fn compile_and_load(
    source: &KernelSource,
    device: i32,
    python_paths: &[PathBuf],
) -> Result<LoadedKernel, CudaError> {
    let driver = Driver::get()?;
    let headers = resolve_includes(
        &source.source,
        source.source_dir.as_deref(),
        &source.include_dirs,
        std::slice::from_ref(&source.shipped_dir),
    );
    let expressions = vec![source.expression.clone()];
    let program = format!("{}.cu", source.name);
    let build = |options: &[String]| -> Result<(Module, Function, bool), CudaError> {
        let (module, compiled) = compile_module(
            &source.source,
            &program,
            options,
            &expressions,
            &headers,
            device,
            python_paths,
        )?;
        let lowered = compiled
            .compiled
            .lowered_name(&source.expression)
            .unwrap_or(&source.expression)
            .to_string();
        let function = module.function(&lowered)?;
        Ok((module, function, compiled.hit))
    };
    let (mut module, mut function, mut hit) = build(&source.options)?;
    let mut attributes = function.attributes()?;
    if let Some(cap) = register_cap_option(attributes.num_regs, source.max_registers) {
        let options: Vec<String> = source.options.iter().cloned().chain([cap]).collect();
        (module, function, hit) = build(&options)?;
        attributes = function.attributes()?;
    }
    Ok(LoadedKernel {
        device,
        module,
        kernel_limits: KernelLimits {
            max_threads_per_block: attributes.max_threads_per_block,
            static_shared: attributes.static_shared_bytes,
        },
        device_limits: crate::device::device_limits(driver, device)?,
        dynamic_shared_allowed: AtomicU32::new(attributes.max_dynamic_shared_bytes),
        function,
        from_cache: hit,
    })
}

#[cfg(test)]
mod tests {
    use super::register_cap_option;

    #[test]
    fn only_a_kernel_above_the_cap_is_capped() {
        assert_eq!(
            register_cap_option(129, Some(128)).as_deref(),
            Some("--maxrregcount=128")
        );
        assert_eq!(register_cap_option(128, Some(128)), None);
        assert_eq!(register_cap_option(81, Some(128)), None);
        assert_eq!(register_cap_option(255, None), None);
    }
}
