//! The CUDA driver: devices, the primary context, modules, kernels, launches, streams, device
//! buffers and events.
//!
//! [`Driver::get`] opens libcuda and calls `cuInit` once per process; a failure is kept and
//! returned again to every later caller. Everything else here is a thin, `Result`-returning
//! wrapper over one driver call, with the one unsafe step — running a kernel on caller-supplied
//! arguments — named and documented on [`Function::launch`].

use cunumpy_core::launch::LaunchShape;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::{Arc, Mutex, OnceLock};

use libloading::Library;

use crate::error::CudaError;
use crate::loader::open_driver;
use crate::sys::{
    device_attr, func_attr, jit_option, CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction,
    CUfunction_attribute, CUgraphNode, CUmodule, CUresult, CUstream, CUstreamCaptureStatus,
    DriverFns, DriverOptionalFns, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_READY,
    CUDA_KERNEL_NODE_PARAMS, CUDA_SUCCESS, CU_STREAM_CAPTURE_STATUS_ACTIVE,
    CU_STREAM_CAPTURE_STATUS_NONE,
};

/// What [`Driver::capture_info`] found of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    /// The stream is capturing and the capture is still valid.
    pub active: bool,
    /// The stream is in a capture (active or invalidated by an error).
    pub capturing: bool,
    /// The capture sequence's id (unique in the process).
    pub id: u64,
    /// The nodes the next captured operation depends on.
    pub last_nodes: Vec<usize>,
}

/// The loaded CUDA driver.
pub struct Driver {
    fns: DriverFns,
    optional: DriverOptionalFns,
    library_path: String,
    version: i32,
    /// Primary contexts retained by this crate, `(device ordinal, CUcontext address)`. Retained
    /// once per device and never released, as CuPy does: the context lives as long as the
    /// process, so pointers from CuPy and from cunumpy belong to the same context.
    primary: Mutex<Vec<(i32, usize)>>,
    _library: Library,
}

static DRIVER: OnceLock<Result<Driver, CudaError>> = OnceLock::new();

impl Driver {
    /// The process-wide driver: opened and initialised (`cuInit(0)`) on first use. When that
    /// fails, every call returns the same error.
    pub fn get() -> Result<&'static Driver, CudaError> {
        match DRIVER.get_or_init(Driver::load) {
            Ok(driver) => Ok(driver),
            Err(err) => Err(err.clone()),
        }
    }

    /// The driver if it was already loaded successfully; never tries to load it.
    pub fn get_if_loaded() -> Option<&'static Driver> {
        DRIVER.get().and_then(|result| result.as_ref().ok())
    }

    fn load() -> Result<Driver, CudaError> {
        let opened = open_driver()?;
        // SAFETY: `opened.library` is libcuda; the tables declare its C signatures.
        let fns = unsafe { DriverFns::load(&opened.library, &opened.path)? };
        // SAFETY: as above.
        let optional = unsafe { DriverOptionalFns::load(&opened.library) };
        let mut driver = Driver {
            fns,
            optional,
            library_path: opened.path,
            version: 0,
            primary: Mutex::new(Vec::new()),
            _library: opened.library,
        };
        // SAFETY: cuInit takes a flags word (must be 0) and may be called any number of times.
        driver.check(unsafe { (driver.fns.cuInit)(0) }, "cuInit")?;
        let mut version: c_int = 0;
        // SAFETY: `version` is a valid out pointer for the duration of the call.
        let code = unsafe { (driver.fns.cuDriverGetVersion)(&mut version) };
        driver.check(code, "cuDriverGetVersion")?;
        driver.version = version;
        Ok(driver)
    }

    /// The raw function table, for calls this crate does not wrap. Calling any of them is
    /// `unsafe` and subject to the CUDA documentation's contract.
    pub fn fns(&self) -> &DriverFns {
        &self.fns
    }

    /// The name or path libcuda was opened by.
    pub fn library_path(&self) -> &str {
        &self.library_path
    }

    /// The driver's CUDA version, as `cuDriverGetVersion` reports it (13000 for 13.0).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// `Ok(())` for `CUDA_SUCCESS`, else the error for `function`.
    #[inline]
    pub fn check(&self, code: CUresult, function: &'static str) -> Result<(), CudaError> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.error(code, function))
        }
    }

    /// The error for a failed call, with the code's name and description from the driver.
    #[cold]
    pub fn error(&self, code: CUresult, function: &'static str) -> CudaError {
        let (name, description) = self.describe(code);
        CudaError::Driver {
            function,
            code,
            name,
            description,
        }
    }

    /// `(cuGetErrorName, cuGetErrorString)` of a code; placeholders for a code the driver does
    /// not know.
    pub fn describe(&self, code: CUresult) -> (String, String) {
        let mut name: *const c_char = ptr::null();
        let mut description: *const c_char = ptr::null();
        // SAFETY: both out pointers are valid; the driver returns static strings or an error.
        let name_ok = unsafe { (self.fns.cuGetErrorName)(code, &mut name) } == CUDA_SUCCESS;
        // SAFETY: as above.
        let desc_ok =
            unsafe { (self.fns.cuGetErrorString)(code, &mut description) } == CUDA_SUCCESS;
        // SAFETY: on success the pointers are null or NUL-terminated static strings.
        let name =
            unsafe { static_c_str(name_ok, name) }.unwrap_or_else(|| format!("CUDA error {code}"));
        // SAFETY: as above.
        let description = unsafe { static_c_str(desc_ok, description) }
            .unwrap_or_else(|| "unknown error code".to_string());
        (name, description)
    }

    /// The number of CUDA devices.
    pub fn device_count(&self) -> Result<i32, CudaError> {
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid out pointer.
        let code = unsafe { (self.fns.cuDeviceGetCount)(&mut count) };
        self.check(code, "cuDeviceGetCount")?;
        Ok(count)
    }

    fn device_handle(&self, ordinal: i32) -> Result<CUdevice, CudaError> {
        let mut device: CUdevice = 0;
        // SAFETY: `device` is a valid out pointer; an invalid ordinal is reported as an error.
        let code = unsafe { (self.fns.cuDeviceGet)(&mut device, ordinal) };
        self.check(code, "cuDeviceGet")?;
        Ok(device)
    }

    fn device_attribute(&self, device: CUdevice, attr: c_int) -> Result<i32, CudaError> {
        let mut value: c_int = 0;
        // SAFETY: `value` is a valid out pointer; `device` came from cuDeviceGet.
        let code = unsafe { (self.fns.cuDeviceGetAttribute)(&mut value, attr, device) };
        self.check(code, "cuDeviceGetAttribute")?;
        Ok(value)
    }

    /// Name, architecture and launch limits of a device.
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceInfo, CudaError> {
        let device = self.device_handle(ordinal)?;
        let mut name_buf = [0 as c_char; 256];
        // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated name.
        let code = unsafe {
            (self.fns.cuDeviceGetName)(name_buf.as_mut_ptr(), name_buf.len() as c_int, device)
        };
        self.check(code, "cuDeviceGetName")?;
        let name_bytes: Vec<u8> = name_buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let name = String::from_utf8_lossy(&name_bytes).into_owned();
        let mut total: usize = 0;
        // SAFETY: `total` is a valid out pointer.
        let code = unsafe { (self.fns.cuDeviceTotalMem_v2)(&mut total, device) };
        self.check(code, "cuDeviceTotalMem_v2")?;
        let attr = |a: c_int| -> Result<u32, CudaError> {
            Ok(u32::try_from(self.device_attribute(device, a)?).unwrap_or(0))
        };
        Ok(DeviceInfo {
            ordinal,
            name,
            compute_capability: (
                attr(device_attr::COMPUTE_CAPABILITY_MAJOR)?,
                attr(device_attr::COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(device_attr::MULTIPROCESSOR_COUNT)?,
            warp_size: attr(device_attr::WARP_SIZE)?,
            max_threads_per_block: attr(device_attr::MAX_THREADS_PER_BLOCK)?,
            max_block_dims: [
                attr(device_attr::MAX_BLOCK_DIM_X)?,
                attr(device_attr::MAX_BLOCK_DIM_Y)?,
                attr(device_attr::MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dims: [
                attr(device_attr::MAX_GRID_DIM_X)?,
                attr(device_attr::MAX_GRID_DIM_Y)?,
                attr(device_attr::MAX_GRID_DIM_Z)?,
            ],
            shared_mem_per_block: attr(device_attr::MAX_SHARED_MEMORY_PER_BLOCK)?,
            shared_mem_per_block_optin: attr(device_attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            total_memory: total as u64,
        })
    }

    /// The calling thread's current context, if it has one.
    pub fn current_context(&self) -> Result<Option<Context>, CudaError> {
        let mut ctx: CUcontext = ptr::null_mut();
        // SAFETY: `ctx` is a valid out pointer.
        let code = unsafe { (self.fns.cuCtxGetCurrent)(&mut ctx) };
        self.check(code, "cuCtxGetCurrent")?;
        Ok((!ctx.is_null()).then_some(Context {
            raw: ctx as usize,
            made_current: false,
        }))
    }

    /// The device of the calling thread's current context.
    pub fn current_device(&self) -> Result<i32, CudaError> {
        let mut device: CUdevice = 0;
        // SAFETY: `device` is a valid out pointer; without a context the driver returns an error.
        let code = unsafe { (self.fns.cuCtxGetDevice)(&mut device) };
        self.check(code, "cuCtxGetDevice")?;
        Ok(device)
    }

    /// The device's primary context, retained once per process.
    fn primary_context(&self, ordinal: i32) -> Result<CUcontext, CudaError> {
        let mut retained = self
            .primary
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&(_, ctx)) = retained.iter().find(|(dev, _)| *dev == ordinal) {
            return Ok(ctx as CUcontext);
        }
        let device = self.device_handle(ordinal)?;
        let mut ctx: CUcontext = ptr::null_mut();
        // SAFETY: `ctx` is a valid out pointer; `device` came from cuDeviceGet.
        let code = unsafe { (self.fns.cuDevicePrimaryCtxRetain)(&mut ctx, device) };
        self.check(code, "cuDevicePrimaryCtxRetain")?;
        retained.push((ordinal, ctx as usize));
        Ok(ctx)
    }

    /// Makes sure the calling thread has a current context: when it has none, the primary
    /// context of device `ordinal` (the one CuPy uses) is retained and made current. A thread
    /// that already has a current context keeps it, whatever its device.
    pub fn ensure_context(&self, ordinal: i32) -> Result<Context, CudaError> {
        if let Some(ctx) = self.current_context()? {
            return Ok(ctx);
        }
        let ctx = self.primary_context(ordinal)?;
        // SAFETY: `ctx` is a primary context retained above and never released.
        let code = unsafe { (self.fns.cuCtxSetCurrent)(ctx) };
        self.check(code, "cuCtxSetCurrent")?;
        Ok(Context {
            raw: ctx as usize,
            made_current: true,
        })
    }

    /// Waits for all work in the current context.
    pub fn synchronize_context(&self) -> Result<(), CudaError> {
        // SAFETY: no arguments; without a context the driver returns an error.
        let code = unsafe { (self.fns.cuCtxSynchronize)() };
        self.check(code, "cuCtxSynchronize")
    }

    /// Waits for all work queued on `stream`.
    pub fn synchronize_stream(&self, stream: StreamHandle) -> Result<(), CudaError> {
        // SAFETY: `StreamHandle` guarantees a valid stream handle.
        let code = unsafe { (self.fns.cuStreamSynchronize)(stream.as_raw()) };
        self.check(code, "cuStreamSynchronize")
    }

    /// `true` when all work queued on `stream` has finished.
    pub fn stream_is_idle(&self, stream: StreamHandle) -> Result<bool, CudaError> {
        // SAFETY: `StreamHandle` guarantees a valid stream handle.
        let code = unsafe { (self.fns.cuStreamQuery)(stream.as_raw()) };
        if code == CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        self.check(code, "cuStreamQuery")?;
        Ok(true)
    }

    /// Whether `stream` is capturing into a graph, and the nodes the next operation captured
    /// on it will depend on (right after a launch: the launch's own node). Needs
    /// `cuStreamGetCaptureInfo_v2` or `_v3`.
    pub fn capture_info(&self, stream: StreamHandle) -> Result<CaptureInfo, CudaError> {
        let mut status: CUstreamCaptureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
        let mut id: u64 = 0;
        let mut graph: *mut c_void = ptr::null_mut();
        let mut deps: *const CUgraphNode = ptr::null();
        let mut n_deps: usize = 0;
        let code = if let Some(v2) = self.optional.cuStreamGetCaptureInfo_v2 {
            // SAFETY: `StreamHandle` guarantees a valid stream; every out pointer is valid.
            unsafe {
                v2(
                    stream.as_raw(),
                    &mut status,
                    &mut id,
                    &mut graph,
                    &mut deps,
                    &mut n_deps,
                )
            }
        } else if let Some(v3) = self.optional.cuStreamGetCaptureInfo_v3 {
            let mut edges: *const c_void = ptr::null();
            // SAFETY: as above; `edges` is a valid out pointer for the edge data array.
            unsafe {
                v3(
                    stream.as_raw(),
                    &mut status,
                    &mut id,
                    &mut graph,
                    &mut deps,
                    &mut edges,
                    &mut n_deps,
                )
            }
        } else {
            return Err(CudaError::MissingSymbol {
                library: self.library_path.clone(),
                symbol: "cuStreamGetCaptureInfo_v2".into(),
                reason: "the driver is older than CUDA 11.3".into(),
            });
        };
        self.check(code, "cuStreamGetCaptureInfo")?;
        let nodes = if status == CU_STREAM_CAPTURE_STATUS_ACTIVE && !deps.is_null() {
            // SAFETY: while the capture is active the driver's array holds `n_deps` node
            // handles, valid until the next operation on the stream; they are copied here.
            unsafe { std::slice::from_raw_parts(deps, n_deps) }
                .iter()
                .map(|n| *n as usize)
                .collect()
        } else {
            Vec::new()
        };
        Ok(CaptureInfo {
            active: status == CU_STREAM_CAPTURE_STATUS_ACTIVE,
            capturing: status != CU_STREAM_CAPTURE_STATUS_NONE,
            id,
            last_nodes: nodes,
        })
    }

    /// Whether this driver can update a kernel node of an instantiated graph in place.
    pub fn can_update_graph_nodes(&self) -> bool {
        self.optional.cuGraphExecKernelNodeSetParams.is_some()
    }

    /// Sets the parameters of kernel node `node` of the instantiated graph `exec` (the node
    /// keeps `function`; `shape` and `shared` as captured) to the values `params` points at.
    ///
    /// # Safety
    /// `exec` is a live executable graph instantiated from the graph `node` belongs to, `node`
    /// is a kernel node of `function`, and `params` holds one value per parameter of
    /// `function`, of its C types, valid for the call (the driver copies them); as for
    /// [`Function::launch`], every device pointer among them must stay valid for every later
    /// launch of `exec`.
    pub unsafe fn set_graph_kernel_params(
        &self,
        exec: usize,
        node: usize,
        function: &Function,
        shape: &LaunchShape,
        shared: u32,
        params: *mut *mut c_void,
    ) -> Result<(), CudaError> {
        let Some(set) = self.optional.cuGraphExecKernelNodeSetParams else {
            return Err(CudaError::MissingSymbol {
                library: self.library_path.clone(),
                symbol: "cuGraphExecKernelNodeSetParams".into(),
                reason: "the driver is older than CUDA 10.1".into(),
            });
        };
        let p = CUDA_KERNEL_NODE_PARAMS {
            func: function.as_raw(),
            gridDimX: shape.grid[0],
            gridDimY: shape.grid[1],
            gridDimZ: shape.grid[2],
            blockDimX: shape.block[0],
            blockDimY: shape.block[1],
            blockDimZ: shape.block[2],
            sharedMemBytes: shared,
            kernelParams: params,
            extra: ptr::null_mut(),
        };
        // SAFETY: the caller upholds the contract above; `p` is a valid `_v1` struct.
        let code = unsafe { set(exec as *mut c_void, node as CUgraphNode, &p) };
        self.check(code, "cuGraphExecKernelNodeSetParams")
    }

    /// The context a stream belongs to; `None` when the driver lacks `cuStreamGetCtx`.
    pub fn stream_context(&self, stream: StreamHandle) -> Result<Option<Context>, CudaError> {
        let Some(get_ctx) = self.optional.cuStreamGetCtx else {
            return Ok(None);
        };
        let mut ctx: CUcontext = ptr::null_mut();
        // SAFETY: `StreamHandle` guarantees a valid handle; `ctx` is a valid out pointer.
        let code = unsafe { get_ctx(stream.as_raw(), &mut ctx) };
        self.check(code, "cuStreamGetCtx")?;
        Ok((!ctx.is_null()).then_some(Context {
            raw: ctx as usize,
            made_current: false,
        }))
    }

    /// `(free, total)` device memory in bytes, for the current context's device.
    pub fn mem_info(&self) -> Result<(usize, usize), CudaError> {
        let mut free: usize = 0;
        let mut total: usize = 0;
        // SAFETY: both out pointers are valid.
        let code = unsafe { (self.fns.cuMemGetInfo_v2)(&mut free, &mut total) };
        self.check(code, "cuMemGetInfo_v2")?;
        Ok((free, total))
    }
}

/// Reads a static C string returned by the driver or NVRTC.
///
/// # Safety
/// When `ok` is true, `ptr` must be null or point to a NUL-terminated string that outlives
/// the call.
pub(crate) unsafe fn static_c_str(ok: bool, ptr: *const c_char) -> Option<String> {
    if !ok || ptr.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller.
    Some(
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// What a device can do, from `cuDeviceGetAttribute` and friends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device ordinal.
    pub ordinal: i32,
    /// The marketing name, e.g. `"NVIDIA H200"`.
    pub name: String,
    /// `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Largest block dimensions (x, y, z).
    pub max_block_dims: [u32; 3],
    /// Largest grid dimensions (x, y, z).
    pub max_grid_dims: [u32; 3],
    /// Shared memory a block may use without opting in, in bytes.
    pub shared_mem_per_block: u32,
    /// Shared memory a block may use after opting in (`set_max_dynamic_shared`), in bytes.
    pub shared_mem_per_block_optin: u32,
    /// Device memory in bytes.
    pub total_memory: u64,
}

/// A context handle. Contexts made current by this crate are primary contexts, never released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    raw: usize,
    /// `true` when [`Driver::ensure_context`] made this context current on the calling thread.
    pub made_current: bool,
}

impl Context {
    /// The raw `CUcontext`.
    pub fn as_raw(&self) -> CUcontext {
        self.raw as CUcontext
    }
}

/// A CUDA stream handle that is known to be valid: the legacy default stream, the per-thread
/// default stream, or a live stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamHandle(usize);

impl StreamHandle {
    /// The legacy default stream (handle 0).
    pub const LEGACY_DEFAULT: StreamHandle = StreamHandle(0);
    /// The per-thread default stream (`CU_STREAM_PER_THREAD`, handle 2).
    pub const PER_THREAD: StreamHandle = StreamHandle(2);

    /// Wraps a raw `CUstream` (for instance CuPy's `Stream.ptr`).
    ///
    /// # Safety
    /// `raw` must be 0, 1 (`CU_STREAM_LEGACY`), 2 (`CU_STREAM_PER_THREAD`) or a stream that was
    /// created and not yet destroyed, and must stay so while the handle is used.
    pub unsafe fn from_raw(raw: usize) -> Self {
        StreamHandle(raw)
    }

    /// The raw handle as an integer.
    pub fn raw(&self) -> usize {
        self.0
    }

    #[inline]
    fn as_raw(&self) -> CUstream {
        self.0 as CUstream
    }
}

/// Opens the driver and calls [`Driver::ensure_context`].
pub fn ensure_context(device_ordinal: i32) -> Result<Context, CudaError> {
    Driver::get()?.ensure_context(device_ordinal)
}

/// Opens the driver and calls [`Driver::synchronize_stream`].
pub fn synchronize_stream(stream: StreamHandle) -> Result<(), CudaError> {
    Driver::get()?.synchronize_stream(stream)
}

/// Opens the driver and calls [`Driver::synchronize_context`].
pub fn synchronize_context() -> Result<(), CudaError> {
    Driver::get()?.synchronize_context()
}

struct ModuleInner {
    raw: usize,
    driver: &'static Driver,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        // SAFETY: `raw` is a module loaded by cuModuleLoadDataEx and unloaded only here, once,
        // after every `Function` of it is gone (they hold this value alive). An error (for
        // instance at process exit, after the driver shut down) is ignored.
        let _ = unsafe { (self.driver.fns.cuModuleUnload)(self.raw as CUmodule) };
    }
}

/// A loaded module (CUBIN or PTX) in the context that was current when it was loaded.
/// Unloaded when it and every [`Function`] taken from it are dropped.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";
const FATBIN_MAGIC: &[u8] = &[0x50, 0xed, 0x55, 0xba];
const JIT_LOG_BYTES: usize = 16 * 1024;

fn read_u16(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as u64)
}

fn read_u32(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as u64)
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// `Some(())` when every region an ELF64 image declares lies within it.
fn elf_in_bounds(b: &[u8]) -> Option<()> {
    const EHDR: u64 = 64;
    const SHT_NOBITS: u64 = 8;
    let len = b.len() as u64;
    // 64-bit, little-endian.
    if b.get(4) != Some(&2) || b.get(5) != Some(&1) || len < EHDR {
        return None;
    }
    let fits = |off: u64, size: u64| off.checked_add(size).is_some_and(|end| end <= len);
    let (phoff, shoff) = (read_u64(b, 0x20)?, read_u64(b, 0x28)?);
    let (phentsize, phnum) = (read_u16(b, 0x36)?, read_u16(b, 0x38)?);
    let (shentsize, shnum) = (read_u16(b, 0x3a)?, read_u16(b, 0x3c)?);
    if phnum > 0 && (phentsize < 56 || !fits(phoff, phentsize * phnum)) {
        return None;
    }
    if shnum > 0 && (shentsize < 64 || !fits(shoff, shentsize * shnum)) {
        return None;
    }
    for i in 0..phnum {
        let at = usize::try_from(phoff + i * phentsize).ok()?;
        if !fits(read_u64(b, at + 0x08)?, read_u64(b, at + 0x20)?) {
            return None;
        }
    }
    for i in 0..shnum {
        let at = usize::try_from(shoff + i * shentsize).ok()?;
        if read_u32(b, at + 4)? != SHT_NOBITS
            && !fits(read_u64(b, at + 0x18)?, read_u64(b, at + 0x20)?)
        {
            return None;
        }
    }
    Some(())
}

/// `Some(())` when a fatbin's header and declared payload lie within it.
fn fatbin_in_bounds(b: &[u8]) -> Option<()> {
    let header = read_u16(b, 6)?;
    let size = read_u64(b, 8)?;
    (header >= 16 && header.checked_add(size)? <= b.len() as u64).then_some(())
}

/// Checks that a binary image's declared regions lie within it (see [`Module::load`]).
pub fn check_image_bounds(image: &[u8]) -> Result<(), CudaError> {
    let ok = if image.starts_with(ELF_MAGIC) {
        elf_in_bounds(image).is_some()
    } else if image.starts_with(FATBIN_MAGIC) {
        fatbin_in_bounds(image).is_some()
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(CudaError::InvalidArgument(format!(
            "the module image ({} bytes) is truncated or not a valid 64-bit CUBIN/fatbin",
            image.len()
        )))
    }
}

impl Module {
    /// Loads a CUBIN, fatbin or PTX image into the calling thread's current context (see
    /// [`Driver::ensure_context`]). A PTX image need not be NUL-terminated. The JIT error log,
    /// when the driver gives one, is in the error.
    ///
    /// `cuModuleLoadData` takes no length, so before the driver sees a binary image its
    /// headers are checked to lie within `image`: an ELF's header, program and section header
    /// tables and every section's bytes; a fatbin's header and declared size. A truncated
    /// image is an error here rather than an out-of-bounds read in the driver.
    pub fn load(image: &[u8]) -> Result<Module, CudaError> {
        Module::load_with(Driver::get()?, image)
    }

    /// [`Module::load`] with an explicit driver.
    pub fn load_with(driver: &'static Driver, image: &[u8]) -> Result<Module, CudaError> {
        if image.is_empty() {
            return Err(CudaError::InvalidArgument(
                "cannot load an empty module image".to_string(),
            ));
        }
        check_image_bounds(image)?;
        let is_binary = image.starts_with(ELF_MAGIC) || image.starts_with(FATBIN_MAGIC);
        let owned;
        let image = if !is_binary && image.last() != Some(&0) {
            let mut with_nul = Vec::with_capacity(image.len() + 1);
            with_nul.extend_from_slice(image);
            with_nul.push(0);
            owned = with_nul;
            &owned[..]
        } else {
            image
        };
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            jit_option::ERROR_LOG_BUFFER,
            jit_option::ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), JIT_LOG_BYTES as *mut c_void];
        let mut module: CUmodule = ptr::null_mut();
        // SAFETY: `image` is a complete CUBIN/fatbin or a NUL-terminated PTX text that outlives
        // the call; the two options point to a log buffer of JIT_LOG_BYTES bytes and pass its
        // size by value, as CU_JIT_ERROR_LOG_BUFFER(_SIZE_BYTES) require; `module` is a valid
        // out pointer.
        let code = unsafe {
            (driver.fns.cuModuleLoadDataEx)(
                &mut module,
                image.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if code != CUDA_SUCCESS {
            let (name, description) = driver.describe(code);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(CudaError::ModuleLoad {
                code,
                name,
                description,
                log: String::from_utf8_lossy(&log[..end]).into_owned(),
            });
        }
        Ok(Module {
            inner: Arc::new(ModuleInner {
                raw: module as usize,
                driver,
            }),
        })
    }

    /// The raw `CUmodule`.
    pub fn as_raw(&self) -> CUmodule {
        self.inner.raw as CUmodule
    }

    /// A kernel of the module by its (lowered, for C++) name.
    pub fn function(&self, name: &str) -> Result<Function, CudaError> {
        let c_name = CString::new(name).map_err(|_| {
            CudaError::InvalidArgument(format!("kernel name {name:?} contains a NUL byte"))
        })?;
        let driver = self.inner.driver;
        let mut func: CUfunction = ptr::null_mut();
        // SAFETY: `func` is a valid out pointer, the module is loaded (kept alive by `self`),
        // and `c_name` is NUL-terminated.
        let code = unsafe {
            (driver.fns.cuModuleGetFunction)(&mut func, self.inner.raw as CUmodule, c_name.as_ptr())
        };
        driver.check(code, "cuModuleGetFunction")?;
        Ok(Function {
            raw: func as usize,
            name: Arc::from(name),
            _module: Arc::clone(&self.inner),
            driver,
        })
    }

    /// A global variable of the module (`__constant__` or `__device__`) by its symbol name;
    /// `Ok(None)` when the module has no such symbol (`CUDA_ERROR_NOT_FOUND`).
    pub fn global(&self, name: &str) -> Result<Option<Global>, CudaError> {
        let c_name = CString::new(name).map_err(|_| {
            CudaError::InvalidArgument(format!("symbol name {name:?} contains a NUL byte"))
        })?;
        let driver = self.inner.driver;
        let mut ptr: CUdeviceptr = 0;
        let mut bytes: usize = 0;
        // SAFETY: both out pointers are valid, the module is loaded (kept alive by `self`),
        // and `c_name` is NUL-terminated.
        let code = unsafe {
            (driver.fns.cuModuleGetGlobal_v2)(
                &mut ptr,
                &mut bytes,
                self.inner.raw as CUmodule,
                c_name.as_ptr(),
            )
        };
        if code == CUDA_ERROR_NOT_FOUND {
            return Ok(None);
        }
        driver.check(code, "cuModuleGetGlobal_v2")?;
        Ok(Some(Global {
            ptr,
            bytes,
            _module: Arc::clone(&self.inner),
            driver,
        }))
    }
}

/// A global variable of a loaded module (`__constant__` or `__device__`): its device address
/// and size, from `cuModuleGetGlobal`. Keeps its module loaded.
#[derive(Clone)]
pub struct Global {
    ptr: CUdeviceptr,
    bytes: usize,
    _module: Arc<ModuleInner>,
    driver: &'static Driver,
}

impl Global {
    /// The device address.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// Copies `src` (exactly the variable's size) into the variable: synchronous, ordered after
    /// all work queued in the module's context (the context is synchronised first and after,
    /// so that no kernel of any stream reads the variable while it changes).
    pub fn write(&self, src: &[u8]) -> Result<(), CudaError> {
        if src.len() != self.bytes {
            return Err(CudaError::InvalidArgument(format!(
                "copying {} bytes into a module variable of {} bytes",
                src.len(),
                self.bytes
            )));
        }
        self.driver.synchronize_context()?;
        // SAFETY: `src` is readable for `bytes` bytes; the variable is `bytes` bytes at `ptr` in
        // a module kept loaded by `_module`, in the context current on this thread (the caller
        // made it current before taking the variable).
        let code =
            unsafe { (self.driver.fns.cuMemcpyHtoD_v2)(self.ptr, src.as_ptr().cast(), self.bytes) };
        self.driver.check(code, "cuMemcpyHtoD_v2")?;
        self.driver.synchronize_context()
    }

    /// The variable's bytes, copied to the host (synchronous, after the context's queued
    /// work).
    pub fn read(&self) -> Result<Vec<u8>, CudaError> {
        let mut out = vec![0u8; self.bytes];
        self.driver.synchronize_context()?;
        // SAFETY: `out` is writable for `bytes` bytes; the variable is `bytes` bytes at `ptr`
        // in a module kept loaded by `_module`.
        let code = unsafe {
            (self.driver.fns.cuMemcpyDtoH_v2)(out.as_mut_ptr().cast(), self.ptr, self.bytes)
        };
        self.driver.check(code, "cuMemcpyDtoH_v2")?;
        Ok(out)
    }
}

/// A kernel of a loaded module. Keeps its module loaded.
#[derive(Clone)]
pub struct Function {
    raw: usize,
    name: Arc<str>,
    _module: Arc<ModuleInner>,
    driver: &'static Driver,
}

/// A kernel's resource use, from `cuFuncGetAttribute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionAttributes {
    /// Most threads per block this kernel can be launched with (register and
    /// `__launch_bounds__` limits included).
    pub max_threads_per_block: u32,
    /// Statically allocated shared memory, in bytes.
    pub static_shared_bytes: u32,
    /// Constant memory, in bytes.
    pub const_bytes: u32,
    /// Local memory per thread, in bytes.
    pub local_bytes: u32,
    /// Registers per thread.
    pub num_regs: u32,
    /// PTX virtual architecture (e.g. 90).
    pub ptx_version: u32,
    /// Binary architecture (e.g. 90).
    pub binary_version: u32,
    /// Current limit on dynamic shared memory per launch, in bytes.
    pub max_dynamic_shared_bytes: u32,
}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw `CUfunction`.
    pub fn as_raw(&self) -> CUfunction {
        self.raw as CUfunction
    }

    /// One attribute (`sys::func_attr::*`).
    pub fn attribute(&self, attr: CUfunction_attribute) -> Result<i32, CudaError> {
        let mut value: c_int = 0;
        // SAFETY: `value` is a valid out pointer; the function's module is alive.
        let code = unsafe { (self.driver.fns.cuFuncGetAttribute)(&mut value, attr, self.as_raw()) };
        self.driver.check(code, "cuFuncGetAttribute")?;
        Ok(value)
    }

    /// The kernel's resource use.
    pub fn attributes(&self) -> Result<FunctionAttributes, CudaError> {
        let get =
            |a| -> Result<u32, CudaError> { Ok(u32::try_from(self.attribute(a)?).unwrap_or(0)) };
        Ok(FunctionAttributes {
            max_threads_per_block: get(func_attr::MAX_THREADS_PER_BLOCK)?,
            static_shared_bytes: get(func_attr::SHARED_SIZE_BYTES)?,
            const_bytes: get(func_attr::CONST_SIZE_BYTES)?,
            local_bytes: get(func_attr::LOCAL_SIZE_BYTES)?,
            num_regs: get(func_attr::NUM_REGS)?,
            ptx_version: get(func_attr::PTX_VERSION)?,
            binary_version: get(func_attr::BINARY_VERSION)?,
            max_dynamic_shared_bytes: get(func_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
        })
    }

    /// Opts the kernel in to `bytes` of dynamic shared memory per launch (needed above the
    /// default 48 KiB, up to the device's opt-in limit minus the static shared memory).
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<(), CudaError> {
        let value = c_int::try_from(bytes).map_err(|_| {
            CudaError::InvalidArgument(format!("{bytes} bytes of shared memory is too many"))
        })?;
        // SAFETY: plain values; the function's module is alive.
        let code = unsafe {
            (self.driver.fns.cuFuncSetAttribute)(
                self.as_raw(),
                func_attr::MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
        };
        self.driver.check(code, "cuFuncSetAttribute")
    }

    /// Queues one launch of the kernel with `shape` and `shared` bytes of dynamic shared
    /// memory on `stream`. Returns as soon as the launch is queued; errors in the kernel itself
    /// surface at the next synchronization.
    ///
    /// # Safety
    /// The caller guarantees that:
    /// - `params` points to an array with exactly one entry per kernel parameter, and entry
    ///   `i` points to a value whose size, alignment and layout are those of parameter `i`'s C
    ///   type; the array and the values stay valid until this call returns (the driver copies
    ///   them while queueing);
    /// - every device pointer among those values refers to memory that stays allocated until
    ///   the kernel finishes and is large enough for every access the kernel makes with these
    ///   arguments and this launch shape, and no other work (host or device) touches that
    ///   memory in a conflicting way while the kernel runs;
    /// - `stream` belongs to the context this kernel's module was loaded in (or is one of the
    ///   default streams), and that context is current on the calling thread.
    #[inline]
    pub unsafe fn launch(
        &self,
        shape: &LaunchShape,
        shared: u32,
        stream: StreamHandle,
        params: *mut *mut c_void,
    ) -> Result<(), CudaError> {
        let (grid, block) = (shape.grid, shape.block);
        // SAFETY: the caller upholds the contract above; the function's module is alive.
        let code = unsafe {
            (self.driver.fns.cuLaunchKernel)(
                self.as_raw(),
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared,
                stream.as_raw(),
                params,
                ptr::null_mut(),
            )
        };
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.launch_error(code, "cuLaunchKernel", grid, block, shared))
        }
    }

    #[cold]
    fn launch_error(
        &self,
        code: CUresult,
        function: &'static str,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
    ) -> CudaError {
        self.driver
            .error(code, function)
            .in_launch(&self.name, grid, block, shared)
    }
}

/// Plain data that may be copied to and from device memory byte for byte.
///
/// # Safety
/// Implementors have no padding and every bit pattern is a valid value.
pub unsafe trait DeviceRepr: Copy + Default + 'static {}

macro_rules! device_repr {
    ($($t:ty),*) => {
        $(
            // SAFETY: a primitive number: no padding, every bit pattern valid.
            unsafe impl DeviceRepr for $t {}
        )*
    };
}
device_repr!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, f32, f64);

/// A device allocation in the context current when it was made; freed on drop. For tests and
/// benchmarks (arrays normally come from CuPy).
pub struct DeviceBuffer {
    ptr: CUdeviceptr,
    bytes: usize,
    driver: &'static Driver,
}

impl DeviceBuffer {
    /// Allocates `bytes` bytes (uninitialised) in the current context.
    pub fn alloc(bytes: usize) -> Result<DeviceBuffer, CudaError> {
        let driver = Driver::get()?;
        if bytes == 0 {
            return Ok(DeviceBuffer {
                ptr: 0,
                bytes,
                driver,
            });
        }
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: `ptr` is a valid out pointer.
        let code = unsafe { (driver.fns.cuMemAlloc_v2)(&mut ptr, bytes) };
        driver.check(code, "cuMemAlloc_v2")?;
        Ok(DeviceBuffer { ptr, bytes, driver })
    }

    /// Allocates and fills from a host slice.
    pub fn from_slice<T: DeviceRepr>(data: &[T]) -> Result<DeviceBuffer, CudaError> {
        let buffer = DeviceBuffer::alloc(std::mem::size_of_val(data))?;
        buffer.copy_from_host(data)?;
        Ok(buffer)
    }

    /// The device address.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// Copies a host slice to the start of the buffer (synchronous).
    pub fn copy_from_host<T: DeviceRepr>(&self, src: &[T]) -> Result<(), CudaError> {
        let n = std::mem::size_of_val(src);
        if n > self.bytes {
            return Err(CudaError::InvalidArgument(format!(
                "copying {n} bytes into a device buffer of {} bytes",
                self.bytes
            )));
        }
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `src` is readable for `n` bytes; the buffer holds at least `n` bytes.
        let code = unsafe { (self.driver.fns.cuMemcpyHtoD_v2)(self.ptr, src.as_ptr().cast(), n) };
        self.driver.check(code, "cuMemcpyHtoD_v2")
    }

    /// Copies the start of the buffer into a host slice (synchronous).
    pub fn copy_to_host<T: DeviceRepr>(&self, dst: &mut [T]) -> Result<(), CudaError> {
        let n = std::mem::size_of_val(dst);
        if n > self.bytes {
            return Err(CudaError::InvalidArgument(format!(
                "copying {n} bytes out of a device buffer of {} bytes",
                self.bytes
            )));
        }
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is writable for `n` bytes and any bit pattern is a valid `T`
        // (`DeviceRepr`); the buffer holds at least `n` bytes.
        let code =
            unsafe { (self.driver.fns.cuMemcpyDtoH_v2)(dst.as_mut_ptr().cast(), self.ptr, n) };
        self.driver.check(code, "cuMemcpyDtoH_v2")
    }

    /// The first `len` elements, copied to the host.
    pub fn to_vec<T: DeviceRepr>(&self, len: usize) -> Result<Vec<T>, CudaError> {
        let mut out = vec![T::default(); len];
        self.copy_to_host(&mut out)?;
        Ok(out)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr != 0 {
            // SAFETY: `ptr` came from cuMemAlloc_v2 and is freed only here; an error (driver
            // shut down) is ignored.
            let _ = unsafe { (self.driver.fns.cuMemFree_v2)(self.ptr) };
        }
    }
}

/// A CUDA event for timing; destroyed on drop.
pub struct Event {
    raw: usize,
    driver: &'static Driver,
}

impl Event {
    /// Creates an event (with timing) in the current context.
    pub fn new() -> Result<Event, CudaError> {
        let driver = Driver::get()?;
        let mut raw: CUevent = ptr::null_mut();
        // SAFETY: `raw` is a valid out pointer; flags 0 = default event with timing.
        let code = unsafe { (driver.fns.cuEventCreate)(&mut raw, 0) };
        driver.check(code, "cuEventCreate")?;
        Ok(Event {
            raw: raw as usize,
            driver,
        })
    }

    /// Records the event on a stream.
    pub fn record(&self, stream: StreamHandle) -> Result<(), CudaError> {
        // SAFETY: the event is alive; `StreamHandle` guarantees a valid stream.
        let code = unsafe { (self.driver.fns.cuEventRecord)(self.raw as CUevent, stream.as_raw()) };
        self.driver.check(code, "cuEventRecord")
    }

    /// Waits until the event has happened.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: the event is alive.
        let code = unsafe { (self.driver.fns.cuEventSynchronize)(self.raw as CUevent) };
        self.driver.check(code, "cuEventSynchronize")
    }

    /// Milliseconds from this event to `end` (both recorded and completed).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, CudaError> {
        let mut ms: f32 = 0.0;
        // SAFETY: `ms` is a valid out pointer; both events are alive.
        let code = unsafe {
            (self.driver.fns.cuEventElapsedTime)(&mut ms, self.raw as CUevent, end.raw as CUevent)
        };
        self.driver.check(code, "cuEventElapsedTime")?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event came from cuEventCreate and is destroyed only here.
        let _ = unsafe { (self.driver.fns.cuEventDestroy_v2)(self.raw as CUevent) };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A minimal ELF64 image: header, one program header, two section headers, 16 data bytes.
    fn tiny_elf() -> Vec<u8> {
        let mut b = vec![0u8; 64 + 56 + 2 * 64 + 16];
        b[..4].copy_from_slice(ELF_MAGIC);
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        b[0x28..0x30].copy_from_slice(&120u64.to_le_bytes()); // e_shoff
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        b[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
        // Program header: offset 248, size 16.
        b[64 + 0x08..64 + 0x10].copy_from_slice(&248u64.to_le_bytes());
        b[64 + 0x20..64 + 0x28].copy_from_slice(&16u64.to_le_bytes());
        // Section 1: PROGBITS at 248, 16 bytes.
        let s1 = 120 + 64;
        b[s1 + 4..s1 + 8].copy_from_slice(&1u32.to_le_bytes());
        b[s1 + 0x18..s1 + 0x20].copy_from_slice(&248u64.to_le_bytes());
        b[s1 + 0x20..s1 + 0x28].copy_from_slice(&16u64.to_le_bytes());
        b
    }

    #[test]
    fn intact_images_pass() {
        assert!(check_image_bounds(&tiny_elf()).is_ok());
        assert!(check_image_bounds(b".version 8.0\n.target sm_90\n").is_ok());
        let mut fatbin = FATBIN_MAGIC.to_vec();
        fatbin.extend_from_slice(&1u16.to_le_bytes());
        fatbin.extend_from_slice(&16u16.to_le_bytes());
        fatbin.extend_from_slice(&4u64.to_le_bytes());
        fatbin.extend_from_slice(&[0; 4]);
        assert!(check_image_bounds(&fatbin).is_ok());
        fatbin.pop();
        assert!(check_image_bounds(&fatbin).is_err());
    }

    /// Real ELF64 files made by real toolchains pass (a CUBIN is one too).
    #[test]
    fn real_elf_files_pass() {
        let exe = std::env::current_exe().unwrap();
        for path in [
            exe.as_path(),
            std::path::Path::new("/lib/x86_64-linux-gnu/libm.so.6"),
        ] {
            if let Ok(bytes) = std::fs::read(path) {
                assert!(check_image_bounds(&bytes).is_ok(), "{}", path.display());
            }
        }
    }

    #[test]
    fn truncated_or_lying_elf_is_refused() {
        let elf = tiny_elf();
        for cut in [4, 63, 64, 120, 200, elf.len() - 1] {
            assert!(check_image_bounds(&elf[..cut]).is_err(), "cut at {cut}");
        }
        let mut big_section = elf.clone();
        let s1 = 120 + 64;
        big_section[s1 + 0x20..s1 + 0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check_image_bounds(&big_section).is_err());
        let mut nobits = big_section.clone();
        nobits[s1 + 4..s1 + 8].copy_from_slice(&8u32.to_le_bytes());
        assert!(
            check_image_bounds(&nobits).is_ok(),
            "NOBITS sections occupy no file bytes"
        );
        let mut elf32 = elf.clone();
        elf32[4] = 1;
        assert!(check_image_bounds(&elf32).is_err());
        assert!(check_image_bounds(b"\x7fELF garbage").is_err());
    }
}
