//! NVRTC: compiling CUDA C++ to CUBIN (or PTX) at run time.
//!
//! [`Nvrtc::get_or_load`] opens NVRTC once per process. [`Nvrtc::compile`] takes no lock of
//! this crate: NVRTC 12 and 13 compile different programs from several threads at once, so the
//! caller may release the Python GIL and compile in parallel.

use std::ffi::{c_char, c_int, CString};
use std::path::PathBuf;
use std::ptr;
use std::sync::OnceLock;

use libloading::Library;

use crate::driver::static_c_str;
use crate::error::{number_lines, CompileError, CudaError};
use crate::loader::{open_nvrtc, NvrtcSearch};
use crate::sys::{nvrtcProgram, nvrtcResult, NvrtcFns, NVRTC_SUCCESS};

/// The loaded NVRTC library.
pub struct Nvrtc {
    fns: NvrtcFns,
    version: (i32, i32),
    supported_archs: Vec<u32>,
    library_path: String,
    builtins_path: Option<String>,
    // Declared after the table so NVRTC is unloaded before its builtins (only relevant to
    // instances made by `Nvrtc::load`; the process-wide one is never dropped).
    _library: Library,
    _builtins: Option<Library>,
}

static NVRTC: OnceLock<Result<Nvrtc, CudaError>> = OnceLock::new();

/// What NVRTC produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// Machine code for exactly one architecture (`nvrtcGetCUBIN`).
    Cubin,
    /// PTX text, JIT-compiled by the driver when loaded (`nvrtcGetPTX`).
    Ptx,
}

impl ImageKind {
    /// `"cubin"` or `"ptx"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ImageKind::Cubin => "cubin",
            ImageKind::Ptx => "ptx",
        }
    }
}

/// The compile target chosen for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// CUBIN when NVRTC supports the device's exact architecture, else PTX.
    pub kind: ImageKind,
    /// The architecture compiled for: the device's, or for PTX the highest NVRTC supports
    /// that is not above the device's.
    pub arch: (u32, u32),
}

impl Target {
    /// The NVRTC option selecting this target (`--gpu-architecture=sm_90` or `compute_86`).
    pub fn option(&self) -> String {
        let prefix = match self.kind {
            ImageKind::Cubin => "sm",
            ImageKind::Ptx => "compute",
        };
        format!("--gpu-architecture={prefix}_{}{}", self.arch.0, self.arch.1)
    }
}

/// A compiled program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// The CUBIN, or the PTX text (NUL-terminated as NVRTC returns it).
    pub image: Vec<u8>,
    /// Which of the two `image` is.
    pub kind: ImageKind,
    /// The architecture compiled for.
    pub arch: (u32, u32),
    /// `(name expression, lowered (mangled) name)` for each name expression, in order.
    pub lowered_names: Vec<(String, String)>,
    /// NVRTC's log (warnings); often empty.
    pub log: String,
}

impl Compiled {
    /// The lowered name of a name expression given to the compile.
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.lowered_names
            .iter()
            .find(|(expr, _)| expr == expression)
            .map(|(_, lowered)| lowered.as_str())
    }
}

/// Destroys an NVRTC program when dropped.
struct Program<'a> {
    raw: nvrtcProgram,
    nvrtc: &'a Nvrtc,
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from nvrtcCreateProgram and is destroyed only here.
        let _ = unsafe { (self.nvrtc.fns.nvrtcDestroyProgram)(&mut self.raw) };
    }
}

fn c_string(what: &str, value: &str) -> Result<CString, CudaError> {
    CString::new(value)
        .map_err(|_| CudaError::InvalidArgument(format!("{what} contains a NUL byte: {value:?}")))
}

impl Nvrtc {
    /// The process-wide NVRTC, searched for with [`NvrtcSearch::standard`] on the first call
    /// (`python_paths` are the Python `sys.path` entries; later calls' paths are ignored). A
    /// failure is kept and returned again to every later caller.
    pub fn get_or_load(python_paths: &[PathBuf]) -> Result<&'static Nvrtc, CudaError> {
        let result = NVRTC.get_or_init(|| Nvrtc::load(&NvrtcSearch::standard(python_paths)));
        match result {
            Ok(nvrtc) => Ok(nvrtc),
            Err(err) => Err(err.clone()),
        }
    }

    /// [`Nvrtc::get_or_load`] without Python paths.
    pub fn get() -> Result<&'static Nvrtc, CudaError> {
        Nvrtc::get_or_load(&[])
    }

    /// The process-wide NVRTC if it was already loaded successfully; never tries to load it.
    pub fn get_if_loaded() -> Option<&'static Nvrtc> {
        NVRTC.get().and_then(|result| result.as_ref().ok())
    }

    /// The reason the process-wide NVRTC failed to load, if it was tried and failed.
    pub fn load_failure() -> Option<CudaError> {
        NVRTC
            .get()
            .and_then(|result| result.as_ref().err().cloned())
    }

    /// Opens an NVRTC found by `search`, not shared with the rest of the process.
    pub fn load(search: &NvrtcSearch) -> Result<Nvrtc, CudaError> {
        let opened = open_nvrtc(search)?;
        // SAFETY: the library is NVRTC; the table declares its C signatures.
        let fns = unsafe { NvrtcFns::load(&opened.nvrtc.library, &opened.nvrtc.path)? };
        let (builtins_path, builtins) = match opened.builtins {
            Some(b) => (Some(b.path), Some(b.library)),
            None => (None, None),
        };
        let mut nvrtc = Nvrtc {
            fns,
            version: (0, 0),
            supported_archs: Vec::new(),
            library_path: opened.nvrtc.path,
            builtins_path,
            _library: opened.nvrtc.library,
            _builtins: builtins,
        };
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        // SAFETY: both out pointers are valid.
        let code = unsafe { (nvrtc.fns.nvrtcVersion)(&mut major, &mut minor) };
        nvrtc.check(code, "nvrtcVersion")?;
        nvrtc.version = (major, minor);
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid out pointer.
        let code = unsafe { (nvrtc.fns.nvrtcGetNumSupportedArchs)(&mut count) };
        nvrtc.check(code, "nvrtcGetNumSupportedArchs")?;
        let mut archs = vec![0 as c_int; usize::try_from(count).unwrap_or(0)];
        if !archs.is_empty() {
            // SAFETY: `archs` holds exactly the number of entries NVRTC reported.
            let code = unsafe { (nvrtc.fns.nvrtcGetSupportedArchs)(archs.as_mut_ptr()) };
            nvrtc.check(code, "nvrtcGetSupportedArchs")?;
        }
        let mut archs: Vec<u32> = archs
            .into_iter()
            .filter_map(|a| u32::try_from(a).ok())
            .collect();
        archs.sort_unstable();
        archs.dedup();
        nvrtc.supported_archs = archs;
        Ok(nvrtc)
    }

    /// `(major, minor)`, e.g. `(13, 0)`.
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// The architectures NVRTC can make CUBIN for, as numbers (`90` for sm_90), ascending.
    pub fn supported_archs(&self) -> &[u32] {
        &self.supported_archs
    }

    /// The path NVRTC was opened from.
    pub fn library_path(&self) -> &str {
        &self.library_path
    }

    /// The builtins library preloaded with it, if any.
    pub fn builtins_path(&self) -> Option<&str> {
        self.builtins_path.as_deref()
    }

    /// The raw function table.
    pub fn fns(&self) -> &NvrtcFns {
        &self.fns
    }

    /// `nvrtcGetErrorString` of a code.
    pub fn error_name(&self, code: nvrtcResult) -> String {
        // SAFETY: nvrtcGetErrorString takes any code and returns a static string or null.
        let ptr = unsafe { (self.fns.nvrtcGetErrorString)(code) };
        // SAFETY: the pointer is null or a static NUL-terminated string.
        unsafe { static_c_str(true, ptr) }.unwrap_or_else(|| format!("NVRTC error {code}"))
    }

    fn check(&self, code: nvrtcResult, function: &'static str) -> Result<(), CudaError> {
        if code == NVRTC_SUCCESS {
            Ok(())
        } else {
            Err(CudaError::Nvrtc {
                function,
                code,
                name: self.error_name(code),
            })
        }
    }

    /// The target for a device of compute capability `arch`.
    pub fn target_for(&self, arch: (u32, u32)) -> Result<Target, CudaError> {
        choose_target(&self.supported_archs, arch).ok_or_else(|| {
            CudaError::InvalidArgument(format!(
                "NVRTC {}.{} supports architectures {:?}; none is at or below sm_{}{}",
                self.version.0, self.version.1, self.supported_archs, arch.0, arch.1
            ))
        })
    }

    /// Compiles `source` for a device of compute capability `arch`: CUBIN for `sm_XY` when
    /// NVRTC supports it, else PTX for the highest supported architecture below it.
    ///
    /// `options` are passed to NVRTC as they are (`-I` folders, `-std=`, `-D`...) and must not
    /// select an architecture; this function adds `--gpu-architecture`. Headers are read by
    /// NVRTC from the `-I` folders. Each of `name_expressions` (e.g. `"kern<float>"`) gets its
    /// lowered name in [`Compiled::lowered_names`].
    pub fn compile(
        &self,
        source: &str,
        program_name: &str,
        options: &[String],
        name_expressions: &[String],
        arch: (u32, u32),
    ) -> Result<Compiled, CudaError> {
        if let Some(bad) = options.iter().find(|o| selects_arch(o)) {
            return Err(CudaError::InvalidArgument(format!(
                "option {bad:?} selects an architecture; cunumpy chooses it from the device"
            )));
        }
        let target = self.target_for(arch)?;
        let mut all_options: Vec<String> = options.to_vec();
        all_options.push(target.option());

        let c_source = c_string("the kernel source", source)?;
        let c_name = c_string("the program name", program_name)?;
        let c_options = all_options
            .iter()
            .map(|o| c_string("an NVRTC option", o))
            .collect::<Result<Vec<_>, _>>()?;
        let c_exprs = name_expressions
            .iter()
            .map(|e| c_string("a name expression", e))
            .collect::<Result<Vec<_>, _>>()?;
        let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let n_options = c_int::try_from(option_ptrs.len())
            .map_err(|_| CudaError::InvalidArgument("too many NVRTC options".to_string()))?;

        let mut raw: nvrtcProgram = ptr::null_mut();
        // SAFETY: `raw` is a valid out pointer; source and name are NUL-terminated and outlive
        // the call; no in-memory headers (count 0, null arrays).
        let code = unsafe {
            (self.fns.nvrtcCreateProgram)(
                &mut raw,
                c_source.as_ptr(),
                c_name.as_ptr(),
                0,
                ptr::null(),
                ptr::null(),
            )
        };
        self.check(code, "nvrtcCreateProgram")?;
        let program = Program { raw, nvrtc: self };

        for expr in &c_exprs {
            // SAFETY: the program is alive; `expr` is NUL-terminated (NVRTC copies it).
            let code = unsafe { (self.fns.nvrtcAddNameExpression)(program.raw, expr.as_ptr()) };
            self.check(code, "nvrtcAddNameExpression")?;
        }

        // SAFETY: the program is alive; `option_ptrs` holds `n_options` NUL-terminated strings
        // that outlive the call.
        let code =
            unsafe { (self.fns.nvrtcCompileProgram)(program.raw, n_options, option_ptrs.as_ptr()) };
        let log = self.program_log(&program);
        if code != NVRTC_SUCCESS {
            return Err(CudaError::Compile(Box::new(CompileError {
                program_name: program_name.to_string(),
                code,
                reason: self.error_name(code),
                log: log.unwrap_or_default(),
                options: all_options,
                numbered_source: number_lines(source),
            })));
        }
        let log = log?;

        let image = match target.kind {
            ImageKind::Cubin => self.read_output(
                &program,
                self.fns.nvrtcGetCUBINSize,
                self.fns.nvrtcGetCUBIN,
                ("nvrtcGetCUBINSize", "nvrtcGetCUBIN"),
            )?,
            ImageKind::Ptx => self.read_output(
                &program,
                self.fns.nvrtcGetPTXSize,
                self.fns.nvrtcGetPTX,
                ("nvrtcGetPTXSize", "nvrtcGetPTX"),
            )?,
        };

        let mut lowered_names = Vec::with_capacity(c_exprs.len());
        for (expr, c_expr) in name_expressions.iter().zip(&c_exprs) {
            let mut lowered: *const c_char = ptr::null();
            // SAFETY: the program is alive and compiled; `lowered` is a valid out pointer.
            let code = unsafe {
                (self.fns.nvrtcGetLoweredName)(program.raw, c_expr.as_ptr(), &mut lowered)
            };
            self.check(code, "nvrtcGetLoweredName")?;
            // SAFETY: on success NVRTC returns a NUL-terminated string owned by the program,
            // which is alive; it is copied before the program is destroyed.
            let name = unsafe { static_c_str(true, lowered) }.ok_or_else(|| CudaError::Nvrtc {
                function: "nvrtcGetLoweredName",
                code: 0,
                name: format!("no lowered name for {expr:?}"),
            })?;
            lowered_names.push((expr.clone(), name));
        }

        Ok(Compiled {
            image,
            kind: target.kind,
            arch: target.arch,
            lowered_names,
            log,
        })
    }

    fn program_log(&self, program: &Program<'_>) -> Result<String, CudaError> {
        let mut size: usize = 0;
        // SAFETY: the program is alive; `size` is a valid out pointer.
        let code = unsafe { (self.fns.nvrtcGetProgramLogSize)(program.raw, &mut size) };
        self.check(code, "nvrtcGetProgramLogSize")?;
        if size == 0 {
            return Ok(String::new());
        }
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` holds the `size` bytes NVRTC reported.
        let code = unsafe { (self.fns.nvrtcGetProgramLog)(program.raw, buf.as_mut_ptr().cast()) };
        self.check(code, "nvrtcGetProgramLog")?;
        while buf.last() == Some(&0) {
            buf.pop();
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    fn read_output(
        &self,
        program: &Program<'_>,
        get_size: unsafe extern "C" fn(nvrtcProgram, *mut usize) -> nvrtcResult,
        get_data: unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> nvrtcResult,
        names: (&'static str, &'static str),
    ) -> Result<Vec<u8>, CudaError> {
        let mut size: usize = 0;
        // SAFETY: the program is alive and compiled; `size` is a valid out pointer.
        let code = unsafe { get_size(program.raw, &mut size) };
        self.check(code, names.0)?;
        let mut buf = vec![0u8; size];
        if size > 0 {
            // SAFETY: `buf` holds the `size` bytes NVRTC reported.
            let code = unsafe { get_data(program.raw, buf.as_mut_ptr().cast()) };
            self.check(code, names.1)?;
        }
        Ok(buf)
    }
}

/// Compiles with the process-wide NVRTC: see [`Nvrtc::compile`].
pub fn compile(
    source: &str,
    program_name: &str,
    options: &[String],
    name_expressions: &[String],
    arch: (u32, u32),
) -> Result<Compiled, CudaError> {
    Nvrtc::get()?.compile(source, program_name, options, name_expressions, arch)
}

fn selects_arch(option: &str) -> bool {
    option.starts_with("-arch")
        || option.starts_with("--gpu-architecture")
        || option.starts_with("--gpu-name")
}

/// CUBIN for the exact architecture when supported, else PTX for the highest supported one not
/// above it; `None` when every supported architecture is above the device's.
pub fn choose_target(supported: &[u32], arch: (u32, u32)) -> Option<Target> {
    let wanted = arch.0 * 10 + arch.1;
    if supported.contains(&wanted) {
        return Some(Target {
            kind: ImageKind::Cubin,
            arch,
        });
    }
    supported
        .iter()
        .copied()
        .filter(|&a| a <= wanted)
        .max()
        .map(|a| Target {
            kind: ImageKind::Ptx,
            arch: (a / 10, a % 10),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_arch_gives_cubin() {
        let t = choose_target(&[75, 80, 86, 89, 90, 100, 120], (9, 0)).unwrap();
        assert_eq!(t.kind, ImageKind::Cubin);
        assert_eq!(t.arch, (9, 0));
        assert_eq!(t.option(), "--gpu-architecture=sm_90");
    }

    #[test]
    fn unknown_arch_gives_ptx_for_the_highest_below() {
        let t = choose_target(&[75, 80, 86, 90], (12, 1)).unwrap();
        assert_eq!(t.kind, ImageKind::Ptx);
        assert_eq!(t.arch, (9, 0));
        assert_eq!(t.option(), "--gpu-architecture=compute_90");
        let t = choose_target(&[75, 80, 86, 90, 100], (10, 3)).unwrap();
        assert_eq!(t.arch, (10, 0));
    }

    #[test]
    fn arch_below_every_supported_one_is_none() {
        assert!(choose_target(&[75, 80], (6, 1)).is_none());
    }

    /// A real shared library that is not NVRTC: found, opened, then refused for its missing
    /// symbols, with an error naming the file and the symbol.
    #[test]
    fn a_library_without_nvrtc_symbols_is_an_error() {
        let Some(libm) = [
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/usr/lib64/libm.so.6",
            "/lib64/libm.so.6",
        ]
        .iter()
        .map(std::path::Path::new)
        .find(|p| p.exists()) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(libm, dir.path().join("libnvrtc.so.12")).unwrap();
        let err = match Nvrtc::load(&NvrtcSearch::only(vec![dir.path().to_path_buf()])) {
            Ok(_) => panic!("libm accepted as NVRTC"),
            Err(err) => err,
        };
        assert!(matches!(err, CudaError::MissingSymbol { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("libnvrtc.so.12"), "{text}");
        assert!(text.contains("nvrtcVersion"), "{text}");
    }

    #[test]
    fn arch_options_are_recognised() {
        assert!(selects_arch("-arch=sm_80"));
        assert!(selects_arch("--gpu-architecture=compute_90"));
        assert!(!selects_arch("-std=c++17"));
    }
}
