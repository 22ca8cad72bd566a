//! One opened emulation library: the launcher ABI shared with the prelude, and the functions
//! taken from the library (valid while it stays open). Below both the builder (`compiler.rs`)
//! and the loaded kernel (`library.rs`).

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::error::EmuError;

/// Must match `cunumpy_emu::ABI` in the prelude.
pub(crate) const ABI: u64 = 2;

/// Must match `cunumpy_emu::launch_config` in the prelude.
#[repr(C)]
pub(crate) struct LaunchConfig {
    pub(crate) abi: u64,
    pub(crate) bounds: *const u64,
    pub(crate) n_bounds: usize,
    pub(crate) seed: u64,
    pub(crate) shuffle: c_int,
    pub(crate) force_fibers: c_int,
    pub(crate) workers: c_uint,
    pub(crate) stack_size: usize,
    pub(crate) detect_races: c_int,
}

pub(crate) type LaunchFn = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_uint,
    *const c_uint,
    usize,
    *const LaunchConfig,
    *mut c_char,
    usize,
) -> c_int;
type AbiFn = unsafe extern "C" fn() -> u64;
type CountFn = unsafe extern "C" fn() -> c_uint;
type ConstantFn =
    unsafe extern "C" fn(c_uint, *mut *const c_char, *mut usize, *mut c_int) -> *mut c_void;

/// One `__constant__` variable of a loaded library: where it is, its size, and the bytes it
/// held when the library was opened (its initialiser).
#[derive(Debug)]
pub(crate) struct ConstantSymbol {
    pub(crate) name: String,
    /// Its host address in the loaded library (valid while the library is open).
    pub(crate) addr: usize,
    pub(crate) initial: Vec<u8>,
    /// Not declared `const` (a `const` one may sit in read-only memory: never written).
    pub(crate) writable: bool,
}

/// Where a library came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// The compiler ran.
    Compiled,
    /// A library with the same key was found in the disk cache (and its hash checked out).
    DiskHit,
}

/// One loaded library: the handle and the functions taken from it (valid while it lives).
pub(crate) struct Loaded {
    pub(crate) launch: LaunchFn,
    pub(crate) n_params: u32,
    pub(crate) path: PathBuf,
    pub(crate) outcome: CacheOutcome,
    /// The source's `__constant__` variables (none for a library built without accessors).
    pub(crate) constants: Vec<ConstantSymbol>,
    _lib: Library,
}

impl Loaded {
    /// Opens the launcher of kernel `slot` of a module library (0: the first kernel, whose
    /// symbols have no suffix; `k`: `cunumpy_emu_launch_k`).
    pub(crate) fn open_slot(
        load: &Path,
        path: &Path,
        kernel: &str,
        outcome: CacheOutcome,
        slot: usize,
    ) -> Result<Loaded, EmuError> {
        let suffix = if slot == 0 {
            String::new()
        } else {
            format!("_{slot}")
        };
        let launch_symbol = format!("cunumpy_emu_launch{suffix}\0");
        let count_symbol = format!("cunumpy_emu_param_count{suffix}\0");
        let load_err = |message: String| EmuError::Load {
            kernel: kernel.to_string(),
            path: path.display().to_string(),
            message,
        };
        // SAFETY: the library was built by this crate from the prelude, the user's source and a
        // generated launcher (or found under a key over exactly those inputs, with its SHA-256
        // checked); loading it runs only the static initialisers of that code.
        let lib = unsafe { Library::new(load) }.map_err(|e| load_err(e.to_string()))?;
        // SAFETY: the prelude defines these symbols with exactly these C signatures.
        let (launch, abi, count) = unsafe {
            let launch = *lib
                .get::<LaunchFn>(launch_symbol.as_bytes())
                .map_err(|e| load_err(e.to_string()))?;
            let abi = *lib
                .get::<AbiFn>(b"cunumpy_emu_abi\0")
                .map_err(|e| load_err(e.to_string()))?;
            let count = *lib
                .get::<CountFn>(count_symbol.as_bytes())
                .map_err(|e| load_err(e.to_string()))?;
            (launch, abi, count)
        };
        // SAFETY: both functions take no arguments and only return a constant.
        let (abi, n_params) = unsafe { (abi(), count()) };
        if abi != ABI {
            return Err(load_err(format!(
                "launcher ABI {abi}, this crate speaks {ABI}"
            )));
        }
        // SAFETY: when present, the generated accessor has exactly this C signature.
        let accessors = unsafe {
            match (
                lib.get::<CountFn>(b"cunumpy_emu_constant_count\0"),
                lib.get::<ConstantFn>(b"cunumpy_emu_constant\0"),
            ) {
                (Ok(count), Ok(get)) => Some((*count, *get)),
                _ => None,
            }
        };
        let mut constants = Vec::new();
        if let Some((count, get)) = accessors {
            // SAFETY: takes no arguments and returns a constant.
            let n = unsafe { count() };
            for i in 0..n {
                let mut name: *const c_char = std::ptr::null();
                let mut size: usize = 0;
                let mut writable: c_int = 0;
                // SAFETY: `i` is below the count; the out pointers are valid.
                let addr = unsafe { get(i, &mut name, &mut size, &mut writable) };
                if addr.is_null() || name.is_null() {
                    continue;
                }
                // SAFETY: the accessor returns a NUL-terminated string literal of the library
                // and the address of a variable of `size` bytes in it (alive while it is open).
                let (name, initial) = unsafe {
                    (
                        std::ffi::CStr::from_ptr(name)
                            .to_string_lossy()
                            .into_owned(),
                        std::slice::from_raw_parts(addr.cast::<u8>(), size).to_vec(),
                    )
                };
                constants.push(ConstantSymbol {
                    name,
                    addr: addr as usize,
                    initial,
                    writable: writable != 0,
                });
            }
        }
        Ok(Loaded {
            launch,
            n_params,
            path: path.to_path_buf(),
            outcome,
            constants,
            _lib: lib,
        })
    }
}
