//! Plain host C++ built into a shared library with the same compiler discovery and disk cache
//! as the emulator (used by the fusion compiler's compiled CPU loops).

use std::path::{Path, PathBuf};

use cunumpy_core::cache_key::CacheKey;
use libloading::Library;

use crate::compiler::{cached_library, compile_into_cache, BuildFailure, EmuCompiler};
use crate::error::EmuError;
use crate::loaded::CacheOutcome;

/// A loaded library built from plain host C++ (no prelude, no launcher).
pub struct HostLibrary {
    lib: Library,
    path: PathBuf,
    outcome: CacheOutcome,
}

impl std::fmt::Debug for HostLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostLibrary")
            .field("path", &self.path)
            .field("outcome", &self.outcome)
            .finish()
    }
}

impl EmuCompiler {
    /// Compiles `source` (C++) with `flags` (after `-shared -fPIC`) into a shared library and
    /// loads it. The disk cache key covers the source, the flags and the compiler's identity;
    /// `what` names the code in errors.
    pub fn build_library(
        &self,
        source: &str,
        flags: &[String],
        cache_dir: Option<&Path>,
        what: &str,
    ) -> Result<HostLibrary, EmuError> {
        let mut all: Vec<String> = vec!["-shared".into(), "-fPIC".into(), "-w".into()];
        all.extend(flags.iter().cloned());
        let mut key = CacheKey::new("host-library");
        key.add("crate-version", env!("CARGO_PKG_VERSION").as_bytes())
            .add("source", source.as_bytes())
            .add("compiler", self.program().as_bytes())
            .add_list("compiler-args", self.prefix_args())
            .add("compiler-version", self.version().as_bytes())
            .add_list("flags", &all);
        let hex = key.hex();
        if let Some(hit) = cache_dir.and_then(|d| cached_library(d, &hex)) {
            if let Ok(lib) = HostLibrary::open(&hit.load, &hit.path, what, CacheOutcome::DiskHit) {
                return Ok(lib);
            }
        }
        let built = compile_into_cache(self, source, &all, false, cache_dir, &hex).map_err(
            |e| match e {
                BuildFailure::Other(e) => e,
                BuildFailure::Compiler { command, stderr } => EmuError::Compile {
                    kernel: what.to_string(),
                    command,
                    stderr,
                },
            },
        )?;
        HostLibrary::open(&built.load, &built.path, what, CacheOutcome::Compiled)
    }
}

impl HostLibrary {
    fn open(
        load: &Path,
        path: &Path,
        what: &str,
        outcome: CacheOutcome,
    ) -> Result<HostLibrary, EmuError> {
        // SAFETY: the library was built by this crate from a caller-given source (or found under
        // a key over exactly that source, flags and compiler, with its SHA-256 checked); loading
        // it runs only the static initialisers of that code.
        let lib = unsafe { Library::new(load) }.map_err(|e| EmuError::Load {
            kernel: what.to_string(),
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(HostLibrary {
            lib,
            path: path.to_path_buf(),
            outcome,
        })
    }

    /// The address of an exported function, as the function pointer type `F`.
    ///
    /// # Safety
    /// `F` must be an `extern "C"` function pointer type matching the symbol's C signature, and
    /// the pointer must not be used after this library is dropped.
    pub unsafe fn function<F: Copy>(&self, name: &str) -> Result<F, EmuError> {
        let mut sym = name.as_bytes().to_vec();
        sym.push(0);
        // SAFETY: the caller guarantees `F` matches the symbol's type.
        let f = unsafe { self.lib.get::<F>(sym.as_slice()) }.map_err(|e| EmuError::Load {
            kernel: name.to_string(),
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(*f)
    }

    /// Whether the compiler ran or the disk cache had the library.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.outcome
    }

    /// The library file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
