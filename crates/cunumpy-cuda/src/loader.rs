//! Finding and opening libcuda and NVRTC at run time.
//!
//! libcuda is opened by soname (`libcuda.so.1`, then `libcuda.so`): the driver is installed
//! system-wide. NVRTC is searched in folders, because the pip wheels (`nvidia-cuda-nvrtc`) ship
//! it without an unversioned name or RUNPATH: first the `nvidia/cu13/lib`, `nvidia/cu12/lib`
//! and `nvidia/cuda_nvrtc/lib` folders under the caller's Python `sys.path` entries, then
//! `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64` and `/usr/local/cuda-*/lib64`
//! (newest first). `libnvrtc-builtins.so.*` from the same folder is opened first and kept open,
//! so NVRTC finds it when it compiles.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::error::CudaError;

/// The sonames tried for the driver, in order.
pub const DRIVER_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

/// The NVRTC file names tried in each folder, in order.
pub const NVRTC_NAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// The folders under a Python `sys.path` entry where the NVIDIA wheels put NVRTC.
pub const PYTHON_NVRTC_SUBDIRS: [&str; 3] = [
    "nvidia/cu13/lib",
    "nvidia/cu12/lib",
    "nvidia/cuda_nvrtc/lib",
];

/// An opened library and the name or path it was opened by.
pub struct OpenedLibrary {
    /// The path or soname passed to `dlopen`.
    pub path: String,
    /// The library handle. Dropping it would unload the library; the crate keeps these in
    /// process-wide statics, so they stay loaded.
    pub library: Library,
}

/// An opened NVRTC and the builtins library preloaded for it.
pub struct OpenedNvrtc {
    /// NVRTC itself.
    pub nvrtc: OpenedLibrary,
    /// `libnvrtc-builtins.so.*` from the same folder, when one was found and opened.
    pub builtins: Option<OpenedLibrary>,
}

/// A loader error with its cause (libloading's `Display` alone says only "dlopen failed").
pub(crate) fn describe_load_error(err: &libloading::Error) -> String {
    use std::error::Error as _;
    match err.source() {
        Some(source) => format!("{err}: {source}"),
        None => err.to_string(),
    }
}

/// Opens the CUDA driver library.
pub fn open_driver() -> Result<OpenedLibrary, CudaError> {
    let mut attempts = Vec::new();
    for name in DRIVER_NAMES {
        // SAFETY: libcuda's initialisers are safe to run at any time in a process; opening it
        // has no other effect.
        match unsafe { Library::new(name) } {
            Ok(library) => {
                return Ok(OpenedLibrary {
                    path: name.to_string(),
                    library,
                })
            }
            Err(err) => attempts.push(format!(
                "{name} (system library search): {}",
                describe_load_error(&err)
            )),
        }
    }
    Err(CudaError::LibraryNotFound {
        library: "libcuda",
        attempts,
    })
}

/// Where to look for NVRTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrtcSearch {
    /// Folders searched in order for [`NVRTC_NAMES`].
    pub dirs: Vec<PathBuf>,
    /// Whether to also try the bare names through the system library search
    /// (`LD_LIBRARY_PATH`, `ld.so.cache`) after the folders.
    pub system_fallback: bool,
}

impl NvrtcSearch {
    /// The standard search: wheel folders under the absolute `python_paths`, then the CUDA
    /// toolkit folders named by the environment, then the system library search.
    pub fn standard(python_paths: &[PathBuf]) -> Self {
        Self::standard_with_env(
            python_paths,
            cunumpy_core::config::var_os,
            Path::new("/usr/local"),
        )
    }

    /// [`NvrtcSearch::standard`] with the environment and the `/usr/local` folder given, for
    /// tests.
    pub fn standard_with_env(
        python_paths: &[PathBuf],
        env: impl Fn(&str) -> Option<OsString>,
        usr_local: &Path,
    ) -> Self {
        let mut dirs: Vec<PathBuf> = Vec::new();
        // Relative entries (`''` is the working directory) are skipped: a library is never
        // loaded from a folder that depends on where the process happens to run.
        for entry in python_paths.iter().filter(|p| p.is_absolute()) {
            for sub in PYTHON_NVRTC_SUBDIRS {
                dirs.push(entry.join(sub));
            }
        }
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(value) = env(var) {
                if !value.is_empty() {
                    dirs.push(PathBuf::from(value).join("lib64"));
                }
            }
        }
        dirs.push(usr_local.join("cuda").join("lib64"));
        dirs.extend(versioned_cuda_dirs(usr_local));
        let mut unique: Vec<PathBuf> = Vec::with_capacity(dirs.len());
        for dir in dirs {
            if !unique.contains(&dir) {
                unique.push(dir);
            }
        }
        NvrtcSearch {
            dirs: unique,
            system_fallback: true,
        }
    }

    /// Only the given folders, no system search (for tests and explicit configuration).
    pub fn only(dirs: Vec<PathBuf>) -> Self {
        NvrtcSearch {
            dirs,
            system_fallback: false,
        }
    }
}

/// `/usr/local/cuda-X.Y/lib64` folders, newest version first.
fn versioned_cuda_dirs(usr_local: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(usr_local) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("cuda-")?;
            let key: Vec<u32> = version
                .split('.')
                .map(|part| part.parse::<u32>().unwrap_or(0))
                .collect();
            Some((key, entry.path().join("lib64")))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found.into_iter().map(|(_, path)| path).collect()
}

/// The builtins libraries in `dir` that fit an NVRTC file name, best first.
fn builtins_candidates(dir: &Path, nvrtc_name: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let major = nvrtc_name.strip_prefix("libnvrtc.so.");
    let mut found: Vec<(bool, String, PathBuf)> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("libnvrtc-builtins.so.")?;
            let matches = match major {
                Some(major) => version == major || version.starts_with(&format!("{major}.")),
                None => true,
            };
            Some((matches, name, entry.path()))
        })
        .collect();
    // Matching major version first, then the longest (most specific) name.
    found.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| b.1.len().cmp(&a.1.len()))
            .then_with(|| b.1.cmp(&a.1))
    });
    found.into_iter().map(|(_, _, path)| path).collect()
}

/// Finds and opens NVRTC; the error lists every place tried.
pub fn open_nvrtc(search: &NvrtcSearch) -> Result<OpenedNvrtc, CudaError> {
    let mut attempts = Vec::new();
    for dir in &search.dirs {
        if !dir.is_dir() {
            attempts.push(format!("{}: no such folder", dir.display()));
            continue;
        }
        let mut any = false;
        for name in NVRTC_NAMES {
            let candidate = dir.join(name);
            if !candidate.exists() {
                continue;
            }
            any = true;
            let mut builtins = None;
            for path in builtins_candidates(dir, name) {
                // SAFETY: opening NVRTC's builtins library runs no code of ours; it only makes
                // the library resident so NVRTC's own dlopen of it succeeds.
                match unsafe { Library::new(&path) } {
                    Ok(library) => {
                        builtins = Some(OpenedLibrary {
                            path: path.display().to_string(),
                            library,
                        });
                        break;
                    }
                    Err(err) => {
                        attempts.push(format!("{}: {}", path.display(), describe_load_error(&err)))
                    }
                }
            }
            // SAFETY: opening NVRTC runs only its initialisers, which have no preconditions.
            match unsafe { Library::new(&candidate) } {
                Ok(library) => {
                    return Ok(OpenedNvrtc {
                        nvrtc: OpenedLibrary {
                            path: candidate.display().to_string(),
                            library,
                        },
                        builtins,
                    })
                }
                Err(err) => attempts.push(format!(
                    "{}: {}",
                    candidate.display(),
                    describe_load_error(&err)
                )),
            }
        }
        if !any {
            attempts.push(format!(
                "{}: none of {}",
                dir.display(),
                NVRTC_NAMES.join(", ")
            ));
        }
    }
    if search.system_fallback {
        for name in NVRTC_NAMES {
            // SAFETY: as above, opening NVRTC has no preconditions.
            match unsafe { Library::new(name) } {
                Ok(library) => {
                    return Ok(OpenedNvrtc {
                        nvrtc: OpenedLibrary {
                            path: name.to_string(),
                            library,
                        },
                        builtins: None,
                    })
                }
                Err(err) => attempts.push(format!(
                    "{name} (system library search): {}",
                    describe_load_error(&err)
                )),
            }
        }
    }
    Err(CudaError::LibraryNotFound {
        library: "libnvrtc",
        attempts,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn standard_search_order() {
        let usr_local = tempfile::tempdir().unwrap();
        for v in ["cuda-12.9", "cuda-12.10", "cuda-13.0", "other"] {
            std::fs::create_dir(usr_local.path().join(v)).unwrap();
        }
        let search = NvrtcSearch::standard_with_env(
            &[
                PathBuf::from("/site"),
                PathBuf::from(""),
                PathBuf::from("rel"),
            ],
            |name| match name {
                "CUDA_HOME" => Some(OsString::from("/opt/cuda")),
                _ => None,
            },
            usr_local.path(),
        );
        let expected: Vec<PathBuf> = vec![
            "/site/nvidia/cu13/lib".into(),
            "/site/nvidia/cu12/lib".into(),
            "/site/nvidia/cuda_nvrtc/lib".into(),
            "/opt/cuda/lib64".into(),
            usr_local.path().join("cuda/lib64"),
            usr_local.path().join("cuda-13.0/lib64"),
            usr_local.path().join("cuda-12.10/lib64"),
            usr_local.path().join("cuda-12.9/lib64"),
        ];
        assert_eq!(search.dirs, expected);
        assert!(search.system_fallback);
    }

    #[test]
    fn missing_nvrtc_lists_where_it_looked() {
        let empty = tempfile::tempdir().unwrap();
        let missing = empty.path().join("does-not-exist");
        let search = NvrtcSearch::only(vec![empty.path().to_path_buf(), missing.clone()]);
        let err = match open_nvrtc(&search) {
            Ok(_) => panic!("found an NVRTC in an empty folder"),
            Err(err) => err,
        };
        let text = err.to_string();
        assert!(text.contains("could not load libnvrtc"), "{text}");
        assert!(text.contains(&empty.path().display().to_string()), "{text}");
        assert!(text.contains("libnvrtc.so.13"), "{text}");
        assert!(
            text.contains(&format!("{}: no such folder", missing.display())),
            "{text}"
        );
    }

    #[test]
    fn unloadable_nvrtc_reports_the_loader_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("libnvrtc.so.13"), b"not an ELF file").unwrap();
        std::fs::write(dir.path().join("libnvrtc-builtins.so.13.0"), b"junk").unwrap();
        let search = NvrtcSearch::only(vec![dir.path().to_path_buf()]);
        let err = match open_nvrtc(&search) {
            Ok(_) => panic!("opened a garbage file"),
            Err(err) => err,
        };
        let text = err.to_string();
        assert!(
            text.contains(&dir.path().join("libnvrtc.so.13").display().to_string()),
            "{text}"
        );
        assert!(text.contains("libnvrtc-builtins.so.13.0"), "{text}");
    }

    #[test]
    fn builtins_prefer_the_matching_major() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "libnvrtc-builtins.so.12.8",
            "libnvrtc-builtins.so.13",
            "libnvrtc-builtins.so.13.0",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let found = builtins_candidates(dir.path(), "libnvrtc.so.13");
        assert_eq!(found[0], dir.path().join("libnvrtc-builtins.so.13.0"));
        assert_eq!(found[1], dir.path().join("libnvrtc-builtins.so.13"));
        assert_eq!(found[2], dir.path().join("libnvrtc-builtins.so.12.8"));
    }
}
