//! The on-disk kernel cache: entries in core's one verified format (`cunumpy_core::disk`:
//! `<dir>/<key>.cnk`, written atomically, checked against its SHA-256 when read; a damaged
//! entry, or one of an older format, is a removed miss).
//!
//! The payload is a sequence of fields, each string or byte string as a `u64` length and its
//! bytes: the key (hex), the image kind (`u8`: 0 CUBIN, 1 PTX), the architecture (`u32` major,
//! `u32` minor), the image, the NVRTC log, then a `u32` count of lowered names followed by
//! `(name expression, lowered name)` pairs.

use std::fs;
use std::path::{Path, PathBuf};

use cunumpy_core::cache_key::CacheKey;
pub use cunumpy_core::disk::{
    decode_verified as decode_file, encode_verified as encode_file, EXTENSION, FORMAT_VERSION,
    HEADER_LEN, MAGIC,
};
use cunumpy_core::disk::{entry_path, read_verified, write_verified};

use crate::error::CudaError;
use crate::nvrtc::{Compiled, ImageKind, Nvrtc};

/// A cache entry: what a compile produced.
pub type Entry = Compiled;

/// A folder of cache entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelCache {
    dir: PathBuf,
}

impl KernelCache {
    /// A cache in `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        KernelCache { dir: dir.into() }
    }

    /// The default folder: see [`default_dir`].
    pub fn default_dir() -> Option<PathBuf> {
        default_dir()
    }

    /// A cache in [`default_dir`], when one can be determined.
    pub fn at_default_dir() -> Option<Self> {
        default_dir().map(KernelCache::new)
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a key; `None` when the key is not 16 to 128 lowercase hex digits.
    pub fn path_for(&self, key: &str) -> Option<PathBuf> {
        valid_key(key).then(|| entry_path(&self.dir, key))
    }

    /// The entry stored under `key`, if a complete and intact one is there. A damaged file is
    /// removed.
    pub fn get(&self, key: &str) -> Option<Entry> {
        let path = self.path_for(key)?;
        read_verified(&path, |payload| decode_entry(payload, key))
    }

    /// Stores `entry` under `key`, atomically.
    pub fn put(&self, key: &str, entry: &Entry) -> Result<(), CudaError> {
        let path = self.path_for(key).ok_or_else(|| {
            CudaError::InvalidArgument(format!("invalid kernel cache key {key:?}"))
        })?;
        write_verified(&path, &encode_entry(key, entry))
            .map_err(|err| CudaError::io(format!("writing {}", path.display()), &err))
    }
}

fn valid_key(key: &str) -> bool {
    (16..=128).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The default cache folder: `$CUNUMPY_CACHE_DIR`, else `$XDG_CACHE_HOME/cunumpy/kernels`, else
/// `~/.cache/cunumpy/kernels`; `None` when none of these variables is set (read by
/// `cunumpy_core::config`).
pub fn default_dir() -> Option<PathBuf> {
    cunumpy_core::config::kernel_cache_dir()
}

/// [`default_dir`] with the environment given, for tests.
pub fn default_dir_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    cunumpy_core::config::kernel_cache_dir_from(env)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Serialises an entry (the payload of a cache file).
pub fn encode_entry(key: &str, entry: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(entry.image.len() + entry.log.len() + 128);
    put_bytes(&mut out, key.as_bytes());
    out.push(match entry.kind {
        ImageKind::Cubin => 0,
        ImageKind::Ptx => 1,
    });
    out.extend_from_slice(&entry.arch.0.to_le_bytes());
    out.extend_from_slice(&entry.arch.1.to_le_bytes());
    put_bytes(&mut out, &entry.image);
    put_bytes(&mut out, entry.log.as_bytes());
    out.extend_from_slice(&(entry.lowered_names.len() as u32).to_le_bytes());
    for (expr, lowered) in &entry.lowered_names {
        put_bytes(&mut out, expr.as_bytes());
        put_bytes(&mut out, lowered.as_bytes());
    }
    out
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
        self.take(usize::try_from(len).ok()?)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

/// Parses a payload written by [`encode_entry`] for `key`; `None` if it is malformed or for
/// another key.
pub fn decode_entry(payload: &[u8], key: &str) -> Option<Entry> {
    let mut r = Reader { rest: payload };
    if r.bytes()? != key.as_bytes() {
        return None;
    }
    let kind = match r.u8()? {
        0 => ImageKind::Cubin,
        1 => ImageKind::Ptx,
        _ => return None,
    };
    let arch = (r.u32()?, r.u32()?);
    let image = r.bytes()?.to_vec();
    let log = r.string()?;
    let count = r.u32()?;
    let mut lowered_names = Vec::new();
    for _ in 0..count {
        lowered_names.push((r.string()?, r.string()?));
    }
    if !r.rest.is_empty() || image.is_empty() {
        return None;
    }
    Some(Compiled {
        image,
        kind,
        arch,
        lowered_names,
        log,
    })
}

pub use cunumpy_core::disk::write_atomic;

/// The inputs that decide a compile's output.
#[derive(Debug, Clone, Copy)]
pub struct KeyInputs<'a> {
    /// The CUDA C++ source.
    pub source: &'a str,
    /// The program name given to NVRTC (it appears in logs and line info).
    pub program_name: &'a str,
    /// The NVRTC options, in order (without the architecture option).
    pub options: &'a [String],
    /// Every header the source includes, directly or not (see
    /// `cunumpy_core::includes::resolve_includes`); path and content both count.
    pub headers: &'a [PathBuf],
    /// The name expressions.
    pub name_expressions: &'a [String],
    /// NVRTC's `(major, minor)`.
    pub nvrtc_version: (i32, i32),
    /// The device's compute capability.
    pub arch: (u32, u32),
}

/// The cache key of a compile: SHA-256 (hex) over the source, program name, options, every
/// header's path and content, the NVRTC version, the architecture, cunumpy's version, the name
/// expressions and the cache format version.
pub fn compile_key(inputs: &KeyInputs<'_>) -> Result<String, CudaError> {
    let mut key = CacheKey::new("nvrtc-image");
    key.add("cache-format", &FORMAT_VERSION.to_le_bytes())
        .add("cunumpy-version", env!("CARGO_PKG_VERSION").as_bytes())
        .add("source", inputs.source.as_bytes())
        .add("program-name", inputs.program_name.as_bytes())
        .add_list("options", inputs.options)
        .add_list("name-expressions", inputs.name_expressions)
        .add(
            "nvrtc-version",
            format!("{}.{}", inputs.nvrtc_version.0, inputs.nvrtc_version.1).as_bytes(),
        )
        .add(
            "arch",
            format!("{}.{}", inputs.arch.0, inputs.arch.1).as_bytes(),
        )
        .add("header-count", &(inputs.headers.len() as u64).to_le_bytes());
    for header in inputs.headers {
        let content = fs::read(header)
            .map_err(|err| CudaError::io(format!("reading header {}", header.display()), &err))?;
        key.add("header-path", header.as_os_str().as_encoded_bytes())
            .add("header-content", &content);
    }
    Ok(key.hex())
}

/// A compile as the cache saw it.
#[derive(Debug, Clone)]
pub struct CachedCompile {
    /// The image and its details.
    pub compiled: Compiled,
    /// The cache key (hex).
    pub key: String,
    /// `true` when the image came from the disk cache.
    pub hit: bool,
    /// Why the new entry could not be stored, if it could not (the compile still succeeded).
    pub store_error: Option<String>,
}

/// Looks `key` up in `cache`; on a miss runs `compile` and stores its result. With no cache,
/// always compiles.
pub fn cached(
    cache: Option<&KernelCache>,
    key: &str,
    compile: impl FnOnce() -> Result<Compiled, CudaError>,
) -> Result<CachedCompile, CudaError> {
    if let Some(entry) = cache.and_then(|c| c.get(key)) {
        return Ok(CachedCompile {
            compiled: entry,
            key: key.to_string(),
            hit: true,
            store_error: None,
        });
    }
    let compiled = compile()?;
    let store_error = cache.and_then(|c| c.put(key, &compiled).err().map(|e| e.to_string()));
    Ok(CachedCompile {
        compiled,
        key: key.to_string(),
        hit: false,
        store_error,
    })
}

/// One compile request.
#[derive(Debug, Clone, Copy)]
pub struct CompileRequest<'a> {
    /// The CUDA C++ source.
    pub source: &'a str,
    /// The program (kernel) name.
    pub program_name: &'a str,
    /// NVRTC options (`-I`, `-std=`, `-D`...), without an architecture option.
    pub options: &'a [String],
    /// Name expressions whose lowered names are wanted.
    pub name_expressions: &'a [String],
    /// Every header the source includes (for the key; NVRTC reads them through `-I`).
    pub headers: &'a [PathBuf],
    /// The device's compute capability.
    pub arch: (u32, u32),
}

/// Compiles through the cache: the key from [`compile_key`], a hit returned as is, a miss
/// compiled with `nvrtc` and stored.
pub fn compile_cached(
    nvrtc: &Nvrtc,
    cache: Option<&KernelCache>,
    request: &CompileRequest<'_>,
) -> Result<CachedCompile, CudaError> {
    let key = compile_key(&KeyInputs {
        source: request.source,
        program_name: request.program_name,
        options: request.options,
        headers: request.headers,
        name_expressions: request.name_expressions,
        nvrtc_version: nvrtc.version(),
        arch: request.arch,
    })?;
    cached(cache, &key, || {
        nvrtc.compile(
            request.source,
            request.program_name,
            request.options,
            request.name_expressions,
            request.arch,
        )
    })
}

/// The `-I` folders named in NVRTC options (`-I dir`, `-Idir`, `--include-path=dir`,
/// `--include-path dir`), in order.
pub fn include_dirs_from_options(options: &[String]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut iter = options.iter();
    while let Some(opt) = iter.next() {
        if opt == "-I" || opt == "--include-path" {
            if let Some(dir) = iter.next() {
                dirs.push(PathBuf::from(dir));
            }
        } else if let Some(dir) = opt.strip_prefix("--include-path=") {
            dirs.push(PathBuf::from(dir));
        } else if let Some(dir) = opt.strip_prefix("-I") {
            dirs.push(PathBuf::from(dir));
        }
    }
    dirs
}

/// Short hex form of a key for file names and messages (first 16 digits).
pub fn short_key(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn entry(tag: &str, size: usize) -> Entry {
        let mut image = b"\x7fELF".to_vec();
        image.extend(std::iter::repeat_n(tag.as_bytes()[0], size));
        Compiled {
            image,
            kind: ImageKind::Cubin,
            arch: (9, 0),
            lowered_names: vec![("k<float>".into(), "_Z1kIfEvv".into())],
            log: format!("written by {tag}"),
        }
    }

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache::new(dir.path().join("nested"));
        assert!(cache.get(KEY).is_none());
        let e = entry("a", 1000);
        cache.put(KEY, &e).unwrap();
        assert_eq!(cache.get(KEY), Some(e.clone()));
        let ptx = Compiled {
            kind: ImageKind::Ptx,
            arch: (8, 6),
            lowered_names: vec![],
            log: String::new(),
            image: b".version 8.0\0".to_vec(),
        };
        cache.put(KEY, &ptx).unwrap();
        assert_eq!(cache.get(KEY), Some(ptx));
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(cache.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![format!("{KEY}.cnk")]);
    }

    #[test]
    fn invalid_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache::new(dir.path());
        for key in [
            "",
            "abc",
            "../../../../etc/passwd",
            "0123456789ABCDEF",
            &"a".repeat(200),
        ] {
            assert!(cache.path_for(key).is_none(), "{key}");
            assert!(cache.get(key).is_none());
            assert!(cache.put(key, &entry("a", 1)).is_err());
        }
    }

    fn damaged(damage: impl Fn(&Path)) {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache::new(dir.path());
        cache.put(KEY, &entry("a", 4096)).unwrap();
        let path = cache.path_for(KEY).unwrap();
        damage(&path);
        assert!(cache.get(KEY).is_none());
        assert!(!path.exists(), "a damaged entry is removed");
        // And the slot can be written again.
        cache.put(KEY, &entry("b", 10)).unwrap();
        assert_eq!(cache.get(KEY), Some(entry("b", 10)));
    }

    #[test]
    fn truncated_entry_is_a_miss() {
        damaged(|p| {
            let bytes = fs::read(p).unwrap();
            fs::write(p, &bytes[..bytes.len() - 1]).unwrap();
        });
        damaged(|p| {
            let bytes = fs::read(p).unwrap();
            fs::write(p, &bytes[..HEADER_LEN - 3]).unwrap();
        });
        damaged(|p| fs::write(p, b"").unwrap());
    }

    #[test]
    fn corrupted_entry_is_a_miss() {
        damaged(|p| {
            let mut bytes = fs::read(p).unwrap();
            let i = bytes.len() - 100;
            bytes[i] ^= 0x01;
            fs::write(p, bytes).unwrap();
        });
        // A corrupted checksum.
        damaged(|p| {
            let mut bytes = fs::read(p).unwrap();
            bytes[30] ^= 0xff;
            fs::write(p, bytes).unwrap();
        });
        // Extra bytes at the end.
        damaged(|p| {
            let mut bytes = fs::read(p).unwrap();
            bytes.push(0);
            fs::write(p, bytes).unwrap();
        });
    }

    #[test]
    fn garbage_and_other_versions_are_misses() {
        damaged(|p| fs::write(p, vec![0xabu8; 5000]).unwrap());
        damaged(|p| {
            let mut bytes = fs::read(p).unwrap();
            bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
            fs::write(p, bytes).unwrap();
        });
        // A verified file whose payload does not parse.
        damaged(|p| fs::write(p, encode_file(b"not an entry")).unwrap());
    }

    #[test]
    fn entry_under_the_wrong_key_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache::new(dir.path());
        cache.put(KEY, &entry("a", 10)).unwrap();
        let other = "fedcba9876543210fedcba9876543210";
        fs::copy(cache.path_for(KEY).unwrap(), cache.path_for(other).unwrap()).unwrap();
        assert!(cache.get(other).is_none());
        assert!(cache.get(KEY).is_some());
    }

    #[test]
    fn concurrent_threads_leave_a_valid_entry() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(KernelCache::new(dir.path()));
        let writers: Vec<_> = ["a", "b", "c", "d"]
            .into_iter()
            .map(|tag| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        cache.put(KEY, &entry(tag, 64 * 1024)).unwrap();
                    }
                })
            })
            .collect();
        let mut seen = 0;
        for _ in 0..200 {
            if let Some(e) = cache.get(KEY) {
                assert!(["a", "b", "c", "d"]
                    .iter()
                    .any(|t| e == entry(t, 64 * 1024)));
                seen += 1;
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        let last = cache.get(KEY).unwrap();
        assert!(last.log.starts_with("written by "));
        let _ = seen;
        let tmp_left = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count();
        assert_eq!(tmp_left, 0);
    }

    const CHILD_DIR: &str = "CUNUMPY_CACHE_TEST_CHILD_DIR";
    const CHILD_TAG: &str = "CUNUMPY_CACHE_TEST_CHILD_TAG";

    /// Run by `concurrent_processes_leave_a_valid_entry` in child processes; does nothing when
    /// run normally.
    #[test]
    fn child_writer() {
        let (Some(dir), Some(tag)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_TAG).ok())
        else {
            return;
        };
        let cache = KernelCache::new(PathBuf::from(dir));
        for _ in 0..25 {
            cache.put(KEY, &entry(&tag, 256 * 1024)).unwrap();
            if let Some(e) = cache.get(KEY) {
                assert!(e.log.starts_with("written by "));
                assert_eq!(e.image.len(), 4 + 256 * 1024);
            }
        }
    }

    #[test]
    fn concurrent_processes_leave_a_valid_entry() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let tags = ["p", "q", "r", "s"];
        let children: Vec<_> = tags
            .iter()
            .map(|tag| {
                std::process::Command::new(&exe)
                    .args(["--exact", "cache::tests::child_writer", "--test-threads=1"])
                    .env(CHILD_DIR, dir.path())
                    .env(CHILD_TAG, tag)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let cache = KernelCache::new(dir.path());
        for _ in 0..100 {
            if let Some(e) = cache.get(KEY) {
                assert!(tags.iter().any(|t| e == entry(t, 256 * 1024)));
            }
        }
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let last = cache.get(KEY).unwrap();
        assert!(tags.iter().any(|t| last == entry(t, 256 * 1024)));
    }

    #[test]
    fn default_dir_precedence() {
        use std::ffi::OsString;
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            default_dir_from(env(&[
                ("CUNUMPY_CACHE_DIR", "/c"),
                ("XDG_CACHE_HOME", "/x"),
                ("HOME", "/h")
            ])),
            Some(PathBuf::from("/c"))
        );
        assert_eq!(
            default_dir_from(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/cunumpy/kernels"))
        );
        assert_eq!(
            default_dir_from(env(&[
                ("CUNUMPY_CACHE_DIR", ""),
                ("XDG_CACHE_HOME", "relative"),
                ("HOME", "/h")
            ])),
            Some(PathBuf::from("/h/.cache/cunumpy/kernels"))
        );
        assert_eq!(default_dir_from(env(&[])), None);
    }

    #[test]
    fn key_changes_with_every_input() {
        let dir = tempfile::tempdir().unwrap();
        let header = dir.path().join("h.cuh");
        fs::write(&header, "#define X 1\n").unwrap();
        let options = vec!["-std=c++17".to_string()];
        let names = vec!["k<float>".to_string()];
        let headers = vec![header.clone()];
        let base = KeyInputs {
            source: "__global__ void k() {}",
            program_name: "k",
            options: &options,
            headers: &headers,
            name_expressions: &names,
            nvrtc_version: (13, 0),
            arch: (9, 0),
        };
        let k0 = compile_key(&base).unwrap();
        assert_eq!(k0.len(), 64);
        assert_eq!(k0, compile_key(&base).unwrap(), "the key is deterministic");

        let mut keys = vec![k0.clone()];
        let other_options = vec!["-std=c++20".to_string()];
        let more_options = vec!["-std=c++17".to_string(), "-lineinfo".to_string()];
        let other_names = vec!["k<double>".to_string()];
        let no_headers: Vec<PathBuf> = vec![];
        keys.push(
            compile_key(&KeyInputs {
                source: "__global__ void k(){}",
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                program_name: "k2",
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                options: &other_options,
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                options: &more_options,
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                name_expressions: &other_names,
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                nvrtc_version: (12, 9),
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                arch: (8, 0),
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                arch: (9, 1),
                ..base
            })
            .unwrap(),
        );
        keys.push(
            compile_key(&KeyInputs {
                headers: &no_headers,
                ..base
            })
            .unwrap(),
        );
        // Header content.
        fs::write(&header, "#define X 2\n").unwrap();
        keys.push(compile_key(&base).unwrap());
        // Header path (same content, other file).
        let header2 = dir.path().join("h2.cuh");
        fs::write(&header2, "#define X 2\n").unwrap();
        let headers2 = vec![header2];
        keys.push(
            compile_key(&KeyInputs {
                headers: &headers2,
                ..base
            })
            .unwrap(),
        );

        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:#?}");

        // The cunumpy version is part of the key.
        let mut manual = CacheKey::new("nvrtc-image");
        manual
            .add("cache-format", &FORMAT_VERSION.to_le_bytes())
            .add("cunumpy-version", b"0.0.0-other");
        assert_ne!(manual.hex(), k0);
    }

    #[test]
    fn missing_header_is_an_error() {
        let headers = vec![PathBuf::from("/nonexistent/cunumpy/h.cuh")];
        let err = compile_key(&KeyInputs {
            source: "",
            program_name: "k",
            options: &[],
            headers: &headers,
            name_expressions: &[],
            nvrtc_version: (13, 0),
            arch: (9, 0),
        })
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/cunumpy/h.cuh"));
    }

    #[test]
    fn cached_compiles_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = KernelCache::new(dir.path());
        let mut calls = 0;
        let first = cached(Some(&cache), KEY, || {
            calls += 1;
            Ok(entry("a", 10))
        })
        .unwrap();
        assert!(!first.hit);
        assert!(first.store_error.is_none());
        let second = cached(Some(&cache), KEY, || {
            calls += 1;
            Ok(entry("z", 10))
        })
        .unwrap();
        assert!(second.hit);
        assert_eq!(second.compiled, entry("a", 10));
        assert_eq!(calls, 1);
        // A compile error is returned and nothing is stored.
        let other = "1111111111111111";
        let err = cached(Some(&cache), other, || {
            Err(CudaError::InvalidArgument("boom".into()))
        });
        assert!(err.is_err());
        assert!(cache.get(other).is_none());
        // Without a cache every call compiles.
        let none = cached(None, KEY, || Ok(entry("n", 1))).unwrap();
        assert!(!none.hit);
    }

    #[test]
    fn unwritable_cache_reports_but_does_not_fail() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").unwrap();
        let cache = KernelCache::new(blocker.join("sub"));
        let r = cached(Some(&cache), KEY, || Ok(entry("a", 1))).unwrap();
        assert!(!r.hit);
        assert!(r.store_error.is_some());
    }

    #[test]
    fn include_dirs_are_read_from_options() {
        let opts: Vec<String> = [
            "-I",
            "/a",
            "-I/b",
            "--include-path=/c",
            "-std=c++17",
            "--include-path",
            "/d",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            include_dirs_from_options(&opts),
            vec![
                PathBuf::from("/a"),
                PathBuf::from("/b"),
                PathBuf::from("/c"),
                PathBuf::from("/d")
            ]
        );
    }
}
