//! Raw FFI: the C types, constants and function-pointer tables of the CUDA driver API and NVRTC.
//!
//! Nothing here is linked at build time. The tables are filled by [`crate::loader`] from
//! libraries opened with `dlopen` at run time. Result codes stay plain `i32`: a code this crate
//! does not know is still a valid value, never undefined behaviour.

#![allow(non_snake_case, non_camel_case_types)]

use std::ffi::{c_char, c_float, c_int, c_uint, c_void};

use libloading::Library;

use crate::error::CudaError;

/// `CUresult`: 0 is success; every other value is an error code.
pub type CUresult = c_int;
/// `CUdevice`: a device ordinal handle.
pub type CUdevice = c_int;
/// `CUdeviceptr`: a device address.
pub type CUdeviceptr = u64;
/// `CUcontext`: an opaque context handle.
pub type CUcontext = *mut c_void;
/// `CUmodule`: an opaque module handle.
pub type CUmodule = *mut c_void;
/// `CUfunction`: an opaque kernel handle.
pub type CUfunction = *mut c_void;
/// `CUstream`: an opaque stream handle (null is the legacy default stream).
pub type CUstream = *mut c_void;
/// `CUevent`: an opaque event handle.
pub type CUevent = *mut c_void;
/// `CUgraph`: an opaque graph handle.
pub type CUgraph = *mut c_void;
/// `CUgraphNode`: an opaque handle of one node of a graph.
pub type CUgraphNode = *mut c_void;
/// `CUgraphExec`: an opaque handle of an instantiated (executable) graph.
pub type CUgraphExec = *mut c_void;
/// `CUstreamCaptureStatus`, as its integer value.
pub type CUstreamCaptureStatus = c_int;

/// `CU_STREAM_CAPTURE_STATUS_NONE`: the stream is not capturing.
pub const CU_STREAM_CAPTURE_STATUS_NONE: CUstreamCaptureStatus = 0;
/// `CU_STREAM_CAPTURE_STATUS_ACTIVE`: the stream is capturing.
pub const CU_STREAM_CAPTURE_STATUS_ACTIVE: CUstreamCaptureStatus = 1;

/// `CUDA_KERNEL_NODE_PARAMS` (its first version, `_v1`: what `cuGraphExecKernelNodeSetParams`
/// without a version suffix takes).
#[repr(C)]
pub struct CUDA_KERNEL_NODE_PARAMS {
    pub func: CUfunction,
    pub gridDimX: c_uint,
    pub gridDimY: c_uint,
    pub gridDimZ: c_uint,
    pub blockDimX: c_uint,
    pub blockDimY: c_uint,
    pub blockDimZ: c_uint,
    pub sharedMemBytes: c_uint,
    pub kernelParams: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// `cuStreamGetCaptureInfo_v2`: status, capture id, graph, the nodes the next captured
/// operation will depend on, and their count.
pub type CuStreamGetCaptureInfoV2 = unsafe extern "C" fn(
    CUstream,
    *mut CUstreamCaptureStatus,
    *mut u64,
    *mut CUgraph,
    *mut *const CUgraphNode,
    *mut usize,
) -> CUresult;
/// `cuStreamGetCaptureInfo_v3`: as `_v2`, plus the edge data of those dependencies.
pub type CuStreamGetCaptureInfoV3 = unsafe extern "C" fn(
    CUstream,
    *mut CUstreamCaptureStatus,
    *mut u64,
    *mut CUgraph,
    *mut *const CUgraphNode,
    *mut *const c_void,
    *mut usize,
) -> CUresult;
/// `cuGraphExecKernelNodeSetParams` (the `_v1` parameter struct).
pub type CuGraphExecKernelNodeSetParams =
    unsafe extern "C" fn(CUgraphExec, CUgraphNode, *const CUDA_KERNEL_NODE_PARAMS) -> CUresult;

/// `CUdevice_attribute`, as its integer value.
pub type CUdevice_attribute = c_int;
/// `CUfunction_attribute`, as its integer value.
pub type CUfunction_attribute = c_int;
/// `CUjit_option`, as its integer value.
pub type CUjit_option = c_int;

/// `nvrtcResult`: 0 is success.
pub type nvrtcResult = c_int;
/// `nvrtcProgram`: an opaque program handle.
pub type nvrtcProgram = *mut c_void;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_NOT_READY`: returned by `cuStreamQuery` while work is pending.
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
/// `CUDA_ERROR_NOT_FOUND`: a named symbol (`cuModuleGetGlobal`) is not in the module.
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
/// `NVRTC_SUCCESS`.
pub const NVRTC_SUCCESS: nvrtcResult = 0;
/// `NVRTC_ERROR_COMPILATION`.
pub const NVRTC_ERROR_COMPILATION: nvrtcResult = 6;

/// Device attributes (`CU_DEVICE_ATTRIBUTE_*`).
pub mod device_attr {
    use super::CUdevice_attribute;
    pub const MAX_THREADS_PER_BLOCK: CUdevice_attribute = 1;
    pub const MAX_BLOCK_DIM_X: CUdevice_attribute = 2;
    pub const MAX_BLOCK_DIM_Y: CUdevice_attribute = 3;
    pub const MAX_BLOCK_DIM_Z: CUdevice_attribute = 4;
    pub const MAX_GRID_DIM_X: CUdevice_attribute = 5;
    pub const MAX_GRID_DIM_Y: CUdevice_attribute = 6;
    pub const MAX_GRID_DIM_Z: CUdevice_attribute = 7;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: CUdevice_attribute = 8;
    pub const WARP_SIZE: CUdevice_attribute = 10;
    pub const MULTIPROCESSOR_COUNT: CUdevice_attribute = 16;
    pub const COMPUTE_CAPABILITY_MAJOR: CUdevice_attribute = 75;
    pub const COMPUTE_CAPABILITY_MINOR: CUdevice_attribute = 76;
    pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: CUdevice_attribute = 97;
}

/// Kernel attributes (`CU_FUNC_ATTRIBUTE_*`).
pub mod func_attr {
    use super::CUfunction_attribute;
    pub const MAX_THREADS_PER_BLOCK: CUfunction_attribute = 0;
    pub const SHARED_SIZE_BYTES: CUfunction_attribute = 1;
    pub const CONST_SIZE_BYTES: CUfunction_attribute = 2;
    pub const LOCAL_SIZE_BYTES: CUfunction_attribute = 3;
    pub const NUM_REGS: CUfunction_attribute = 4;
    pub const PTX_VERSION: CUfunction_attribute = 5;
    pub const BINARY_VERSION: CUfunction_attribute = 6;
    pub const MAX_DYNAMIC_SHARED_SIZE_BYTES: CUfunction_attribute = 8;
}

/// JIT options used by `cuModuleLoadDataEx` (`CU_JIT_*`).
pub mod jit_option {
    use super::CUjit_option;
    pub const ERROR_LOG_BUFFER: CUjit_option = 5;
    pub const ERROR_LOG_BUFFER_SIZE_BYTES: CUjit_option = 6;
}

/// Reads one symbol as a value of type `T` (a function pointer type).
///
/// # Safety
/// `T` must be the exact C type of the symbol `name` in `lib`.
unsafe fn symbol<T: Copy>(lib: &Library, path: &str, name: &str) -> Result<T, CudaError> {
    // SAFETY: the caller guarantees that `T` is the symbol's true type.
    match unsafe { lib.get::<T>(name) } {
        Ok(sym) => Ok(*sym),
        Err(err) => Err(CudaError::MissingSymbol {
            library: path.to_string(),
            symbol: name.to_string(),
            reason: crate::loader::describe_load_error(&err),
        }),
    }
}

/// Reads an optional symbol: `None` when the library does not export it.
///
/// # Safety
/// As for [`symbol`].
unsafe fn optional_symbol<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    // SAFETY: the caller guarantees that `T` is the symbol's true type.
    unsafe { lib.get::<T>(name) }.ok().map(|sym| *sym)
}

/// Declares a table of C function pointers and its loader. Every field is named after its C
/// symbol so the table reads like the C header.
macro_rules! fn_table {
    (
        $(#[$meta:meta])*
        pub struct $table:ident {
            $( $field:ident : fn($($arg:ty),* $(,)?) -> $ret:ty; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        pub struct $table {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        impl $table {
            /// Resolves every symbol of the table in `lib` (opened from `path`).
            ///
            /// # Safety
            /// `lib` must be the library the table describes, so each symbol has the declared
            /// C signature.
            pub unsafe fn load(lib: &Library, path: &str) -> Result<Self, CudaError> {
                Ok(Self {
                    $(
                        // SAFETY: the caller guarantees `lib` is the described library; the
                        // field's type is the symbol's C signature.
                        $field: unsafe { symbol(lib, path, stringify!($field))? },
                    )*
                })
            }
        }
    };
}

fn_table! {
    /// The CUDA driver functions cunumpy uses.
    pub struct DriverFns {
        cuInit: fn(c_uint) -> CUresult;
        cuDriverGetVersion: fn(*mut c_int) -> CUresult;
        cuDeviceGet: fn(*mut CUdevice, c_int) -> CUresult;
        cuDeviceGetCount: fn(*mut c_int) -> CUresult;
        cuDeviceGetName: fn(*mut c_char, c_int, CUdevice) -> CUresult;
        cuDeviceGetAttribute: fn(*mut c_int, CUdevice_attribute, CUdevice) -> CUresult;
        cuDeviceTotalMem_v2: fn(*mut usize, CUdevice) -> CUresult;
        cuDevicePrimaryCtxRetain: fn(*mut CUcontext, CUdevice) -> CUresult;
        cuCtxGetCurrent: fn(*mut CUcontext) -> CUresult;
        cuCtxSetCurrent: fn(CUcontext) -> CUresult;
        cuCtxGetDevice: fn(*mut CUdevice) -> CUresult;
        cuCtxSynchronize: fn() -> CUresult;
        cuModuleLoadData: fn(*mut CUmodule, *const c_void) -> CUresult;
        cuModuleLoadDataEx: fn(
            *mut CUmodule,
            *const c_void,
            c_uint,
            *mut CUjit_option,
            *mut *mut c_void,
        ) -> CUresult;
        cuModuleUnload: fn(CUmodule) -> CUresult;
        cuModuleGetFunction: fn(*mut CUfunction, CUmodule, *const c_char) -> CUresult;
        cuModuleGetGlobal_v2: fn(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char) -> CUresult;
        cuFuncGetAttribute: fn(*mut c_int, CUfunction_attribute, CUfunction) -> CUresult;
        cuFuncSetAttribute: fn(CUfunction, CUfunction_attribute, c_int) -> CUresult;
        cuLaunchKernel: fn(
            CUfunction,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            c_uint,
            CUstream,
            *mut *mut c_void,
            *mut *mut c_void,
        ) -> CUresult;
        cuStreamSynchronize: fn(CUstream) -> CUresult;
        cuStreamQuery: fn(CUstream) -> CUresult;
        cuGetErrorName: fn(CUresult, *mut *const c_char) -> CUresult;
        cuGetErrorString: fn(CUresult, *mut *const c_char) -> CUresult;
        cuMemAlloc_v2: fn(*mut CUdeviceptr, usize) -> CUresult;
        cuMemFree_v2: fn(CUdeviceptr) -> CUresult;
        cuMemcpyHtoD_v2: fn(CUdeviceptr, *const c_void, usize) -> CUresult;
        cuMemcpyDtoH_v2: fn(*mut c_void, CUdeviceptr, usize) -> CUresult;
        cuMemGetInfo_v2: fn(*mut usize, *mut usize) -> CUresult;
        cuEventCreate: fn(*mut CUevent, c_uint) -> CUresult;
        cuEventRecord: fn(CUevent, CUstream) -> CUresult;
        cuEventSynchronize: fn(CUevent) -> CUresult;
        cuEventElapsedTime: fn(*mut c_float, CUevent, CUevent) -> CUresult;
        cuEventDestroy_v2: fn(CUevent) -> CUresult;
    }
}

/// Driver functions that older or newer drivers may lack.
#[derive(Clone, Copy)]
pub struct DriverOptionalFns {
    pub cuStreamGetCtx: Option<unsafe extern "C" fn(CUstream, *mut CUcontext) -> CUresult>,
    /// Stream capture (CUDA 11.3+): the node a captured launch became.
    pub cuStreamGetCaptureInfo_v2: Option<CuStreamGetCaptureInfoV2>,
    /// The same in drivers that dropped `_v2` (CUDA 12.3+ has both).
    pub cuStreamGetCaptureInfo_v3: Option<CuStreamGetCaptureInfoV3>,
    /// Updating a kernel node of an instantiated graph in place (CUDA 10.1+).
    pub cuGraphExecKernelNodeSetParams: Option<CuGraphExecKernelNodeSetParams>,
}

impl DriverOptionalFns {
    /// Resolves the optional driver symbols.
    ///
    /// # Safety
    /// `lib` must be libcuda.
    pub unsafe fn load(lib: &Library) -> Self {
        Self {
            // SAFETY: the caller guarantees `lib` is libcuda, whose `cuStreamGetCtx` has this
            // signature.
            cuStreamGetCtx: unsafe { optional_symbol(lib, "cuStreamGetCtx") },
            // SAFETY: as above: libcuda's symbols of these names have the declared types.
            cuStreamGetCaptureInfo_v2: unsafe { optional_symbol(lib, "cuStreamGetCaptureInfo_v2") },
            // SAFETY: as above.
            cuStreamGetCaptureInfo_v3: unsafe { optional_symbol(lib, "cuStreamGetCaptureInfo_v3") },
            // SAFETY: as above; the unsuffixed symbol takes the `_v1` parameter struct.
            cuGraphExecKernelNodeSetParams: unsafe {
                optional_symbol(lib, "cuGraphExecKernelNodeSetParams")
            },
        }
    }
}

fn_table! {
    /// The NVRTC functions cunumpy uses.
    pub struct NvrtcFns {
        nvrtcVersion: fn(*mut c_int, *mut c_int) -> nvrtcResult;
        nvrtcGetNumSupportedArchs: fn(*mut c_int) -> nvrtcResult;
        nvrtcGetSupportedArchs: fn(*mut c_int) -> nvrtcResult;
        nvrtcCreateProgram: fn(
            *mut nvrtcProgram,
            *const c_char,
            *const c_char,
            c_int,
            *const *const c_char,
            *const *const c_char,
        ) -> nvrtcResult;
        nvrtcCompileProgram: fn(nvrtcProgram, c_int, *const *const c_char) -> nvrtcResult;
        nvrtcGetProgramLogSize: fn(nvrtcProgram, *mut usize) -> nvrtcResult;
        nvrtcGetProgramLog: fn(nvrtcProgram, *mut c_char) -> nvrtcResult;
        nvrtcGetCUBINSize: fn(nvrtcProgram, *mut usize) -> nvrtcResult;
        nvrtcGetCUBIN: fn(nvrtcProgram, *mut c_char) -> nvrtcResult;
        nvrtcGetPTXSize: fn(nvrtcProgram, *mut usize) -> nvrtcResult;
        nvrtcGetPTX: fn(nvrtcProgram, *mut c_char) -> nvrtcResult;
        nvrtcAddNameExpression: fn(nvrtcProgram, *const c_char) -> nvrtcResult;
        nvrtcGetLoweredName: fn(nvrtcProgram, *const c_char, *mut *const c_char) -> nvrtcResult;
        nvrtcDestroyProgram: fn(*mut nvrtcProgram) -> nvrtcResult;
        nvrtcGetErrorString: fn(nvrtcResult) -> *const c_char;
    }
}
