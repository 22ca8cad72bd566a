//! Finding the host C++ compiler, building an emulation library, and the on-disk cache.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cunumpy_core::cache_key::CacheKey;
use cunumpy_core::disk::{entry_path, read_verified, write_atomic, write_verified};

use crate::error::EmuError;
use crate::includes::collect_headers;
use crate::loaded::{CacheOutcome, Loaded};
use crate::rewrite::{base_name, mentions_sync, rewrite};

/// The C++ prelude every kernel is compiled with.
pub const PRELUDE: &str = include_str!("../prelude/cunumpy_emu.h");

/// Headers that CUDA sources include and that have no meaning on the host: empty stand-ins.
const STUB_HEADERS: [&str; 8] = [
    "cooperative_groups.h",
    "cooperative_groups/reduce.h",
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda.h",
    "device_launch_parameters.h",
    "device_functions.h",
    "math_constants.h",
];
const MATH_CONSTANTS: &str = "#pragma once\n#define CUDART_PI 3.1415926535897931e+0\n\
#define CUDART_PI_F 3.141592654f\n#define CUDART_INF __builtin_inf()\n\
#define CUDART_INF_F __builtin_inff()\n#define CUDART_NAN __builtin_nan(\"\")\n\
#define CUDART_NAN_F __builtin_nanf(\"\")\n#define CUDART_SQRT_2PI 2.5066282746310002e+0\n";

/// Flags every build uses (before the user's options).
const BASE_FLAGS: [&str; 11] = [
    "-std=c++17",
    "-O2",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
    "-fno-math-errno",
    "-pthread",
    "-w",
    // the fault handler jumps from the signal stack back to a thread's landing point, which
    // glibc's fortified longjmp would refuse
    "-U_FORTIFY_SOURCE",
    // an access through NULL stays an access (reported as such), not a trap instruction
    "-fno-delete-null-pointer-checks",
];

static NONCE: AtomicU64 = AtomicU64::new(0);

/// A host C++ compiler: the command (from `$CXX`, else the first of `c++`, `g++`, `clang++`
/// that runs) and its `--version` text, which is part of every cache key.
#[derive(Debug, Clone)]
pub struct EmuCompiler {
    program: String,
    prefix_args: Vec<String>,
    version: String,
}

/// Which build of a kernel: plain, or with checked pointer parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    Plain,
    Checked,
}

/// Everything a build needs; kept by [`EmuLibrary`] so it can build its checked variant later.
#[derive(Debug, Clone)]
pub(crate) struct BuildInputs {
    pub compiler: EmuCompiler,
    pub source: String,
    pub expression: String,
    /// Other kernels of the source this translation unit also exports a launcher for (a
    /// module: one library for every launch of a fused plan); empty for one kernel.
    pub also: Vec<String>,
    /// Which kernel of the module the loaded launcher is (0: `expression`, k: `also[k - 1]`).
    pub slot: usize,
    pub options: Vec<String>,
    pub include_dirs: Vec<PathBuf>,
    pub cache_dir: Option<PathBuf>,
}

impl EmuCompiler {
    /// `$CXX` when set (it may carry arguments, such as `ccache g++`), else the first of `c++`,
    /// `g++`, `clang++` that answers `--version`.
    pub fn detect() -> Result<EmuCompiler, EmuError> {
        if let Some(cxx) = cunumpy_core::config::cxx() {
            return EmuCompiler::new(&cxx);
        }
        let mut tried = Vec::new();
        for name in ["c++", "g++", "clang++"] {
            match EmuCompiler::new(name) {
                Ok(c) => return Ok(c),
                Err(_) => tried.push(name.to_string()),
            }
        }
        Err(EmuError::NoCompiler {
            tried: tried.join(", "),
        })
    }

    /// A given compiler command (split at whitespace), checked by running it with `--version`.
    pub fn new(command: &str) -> Result<EmuCompiler, EmuError> {
        let mut words = command.split_whitespace().map(str::to_string);
        let Some(program) = words.next() else {
            return Err(EmuError::NoCompiler {
                tried: "(empty command)".to_string(),
            });
        };
        let prefix_args: Vec<String> = words.collect();
        let out = Command::new(&program)
            .args(&prefix_args)
            .arg("--version")
            .output()
            .map_err(|e| EmuError::NoCompiler {
                tried: format!("{command} ({e})"),
            })?;
        if !out.status.success() {
            return Err(EmuError::NoCompiler {
                tried: format!("{command} (--version exited with {})", out.status),
            });
        }
        Ok(EmuCompiler {
            program: resolve_in_path(&program),
            prefix_args,
            version: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        })
    }

    /// The compiler program (an absolute path when it was found on `PATH`).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Arguments given before the program's own (`$CXX="ccache g++"`: none; the program is
    /// `ccache`, these are `["g++"]`).
    pub fn prefix_args(&self) -> &[String] {
        &self.prefix_args
    }

    /// The compiler's `--version` output.
    pub fn version(&self) -> &str {
        &self.version
    }
}

/// What a build learned about the kernel.
#[derive(Debug, Clone)]
pub(crate) struct KernelInfo {
    pub param_names: Vec<String>,
    pub uses_sync: bool,
    /// Seconds the compiler ran (0 for a disk-cache hit).
    pub compile_seconds: f64,
    /// The folder the library is cached in (None: not stored on disk).
    pub cached_in: Option<PathBuf>,
}

fn resolve_in_path(program: &str) -> String {
    if program.contains('/') {
        return program.to_string();
    }
    if let Some(paths) = cunumpy_core::config::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join(program);
            if p.is_file() {
                return p.to_string_lossy().into_owned();
            }
        }
    }
    program.to_string()
}

/// The user's options that reach the host compiler, and the include directories among them.
fn host_options(options: &[String]) -> (Vec<String>, Vec<PathBuf>, bool) {
    let mut out = Vec::new();
    let mut dirs = Vec::new();
    let mut fp_contract = false;
    let mut it = options.iter().peekable();
    while let Some(o) = it.next() {
        let o = o.trim();
        if matches!(o, "-D" | "-U" | "-I") {
            if let Some(v) = it.next() {
                if o == "-I" {
                    dirs.push(PathBuf::from(v));
                }
                out.push(format!("{o}{v}"));
            }
            continue;
        }
        if let Some(d) = o.strip_prefix("-I") {
            dirs.push(PathBuf::from(d));
            out.push(o.to_string());
        } else if let Some(s) = o.strip_prefix("--std=") {
            out.push(format!("-std={s}"));
        } else if o.starts_with("-ffp-contract=") {
            fp_contract = true;
            out.push(o.to_string());
        } else if o.starts_with("-D")
            || o.starts_with("-U")
            || o.starts_with("-O")
            || o.starts_with("-std=")
            || (o.starts_with("-f") && !o.starts_with("-fmad") && !o.starts_with("-ftz"))
            || o == "-g"
        {
            out.push(o.to_string());
        }
    }
    (out, dirs, fp_contract)
}

fn c_string_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The translation unit: prelude, rewritten source, launcher.
pub(crate) fn translation_unit(
    inputs: &BuildInputs,
    variant: Variant,
    headers: &[(PathBuf, Vec<u8>)],
) -> (String, KernelInfo) {
    let base = base_name(&inputs.expression);
    let rewritten = rewrite(&inputs.source, base, variant == Variant::Checked);
    let uses_sync = mentions_sync(&inputs.source)
        || headers
            .iter()
            .any(|(_, h)| mentions_sync(&String::from_utf8_lossy(h)));
    let names: Vec<String> = rewritten
        .param_names
        .iter()
        .map(|n| c_string_literal(n))
        .collect();
    let n_names = names.len();
    let names = if names.is_empty() {
        "nullptr".to_string()
    } else {
        names.join(", ")
    };
    let expr = &inputs.expression;
    let file = c_string_literal(&format!("{base}.cu"));
    let kernel = c_string_literal(expr);
    let tu = format!(
        "{PRELUDE}\n#line 1 {file}\n{src}\n#line 1 \"cunumpy_emu_launcher.cpp\"\n\
extern \"C\" __attribute__((visibility(\"default\"))) int cunumpy_emu_launch(void** params, \
const unsigned* grid, const unsigned* block, size_t shared_mem, \
const ::cunumpy_emu::launch_config* cfg, char* err, size_t err_len) {{\n\
  static const char* const names[] = {{{names}}};\n\
  return ::cunumpy_emu::launcher< &{expr} >::launch({kernel}, names, {n_names}, params, grid, block, \
shared_mem, cfg, {sync}, err, err_len);\n}}\n\
extern \"C\" __attribute__((visibility(\"default\"))) unsigned long long cunumpy_emu_abi() {{ return ::cunumpy_emu::ABI; }}\n\
extern \"C\" __attribute__((visibility(\"default\"))) unsigned cunumpy_emu_param_count() {{ \
return (unsigned)::cunumpy_emu::launcher< &{expr} >::N; }}\n{more}",
        src = rewritten.source,
        sync = if uses_sync { "true" } else { "false" },
        more = module_launchers(inputs, uses_sync) + &constant_accessors(&inputs.source),
    );
    (
        tu,
        KernelInfo {
            param_names: rewritten.param_names,
            uses_sync,
            compile_seconds: 0.0,
            cached_in: None,
        },
    )
}

/// The launchers of the other kernels of a module (`BuildInputs::also`): kernel `k` (from 1)
/// is `cunumpy_emu_launch_k` and `cunumpy_emu_param_count_k`.
fn module_launchers(inputs: &BuildInputs, uses_sync: bool) -> String {
    let mut out = String::new();
    for (k, expr) in inputs.also.iter().enumerate() {
        let k = k + 1;
        let names: Vec<String> = rewrite(&inputs.source, base_name(expr), false)
            .param_names
            .iter()
            .map(|n| c_string_literal(n))
            .collect();
        let n_names = names.len();
        let names = if names.is_empty() {
            "nullptr".to_string()
        } else {
            names.join(", ")
        };
        let kernel = c_string_literal(expr);
        out.push_str(&format!(
            "extern \"C\" __attribute__((visibility(\"default\"))) int cunumpy_emu_launch_{k}(\
void** params, const unsigned* grid, const unsigned* block, size_t shared_mem, \
const ::cunumpy_emu::launch_config* cfg, char* err, size_t err_len) {{\n\
  static const char* const names[] = {{{names}}};\n\
  return ::cunumpy_emu::launcher< &{expr} >::launch({kernel}, names, {n_names}, params, grid, \
block, shared_mem, cfg, {sync}, err, err_len);\n}}\n\
extern \"C\" __attribute__((visibility(\"default\"))) unsigned cunumpy_emu_param_count_{k}() {{ \
return (unsigned)::cunumpy_emu::launcher< &{expr} >::N; }}\n",
            sync = if uses_sync { "true" } else { "false" },
        ));
    }
    out
}

/// The accessors of the source's `__constant__` variables (those at global scope,
/// `cunumpy_core::constants::constant_declarations`): `cunumpy_emu_constant_count()` and
/// `cunumpy_emu_constant(i, &name, &size, &writable)`, which returns the address of variable
/// `i` (its name, byte size and whether it may be written, i.e. is not `const`, through the
/// out pointers), or null past the end.
fn constant_accessors(source: &str) -> String {
    let decls = cunumpy_core::constants::constant_declarations(source);
    let mut cases = String::new();
    for (i, d) in decls.iter().enumerate() {
        let name = c_string_literal(&d.name);
        cases.push_str(&format!(
            "    case {i}: *name = {name}; *size = sizeof(::{var}); *writable = {w}; \
return const_cast<void*>(static_cast<const volatile void*>(&::{var}));\n",
            var = d.name,
            w = i32::from(!d.is_const),
        ));
    }
    format!(
        "extern \"C\" __attribute__((visibility(\"default\"))) unsigned cunumpy_emu_constant_count() \
{{ return {n}u; }}\n\
extern \"C\" __attribute__((visibility(\"default\"))) void* cunumpy_emu_constant(unsigned i, \
const char** name, size_t* size, int* writable) {{\n  switch (i) {{\n{cases}    default: return nullptr;\n  }}\n}}\n",
        n = decls.len()
    )
}

fn unique_dir(parent: &Path, tag: &str) -> Result<PathBuf, EmuError> {
    unique_dir_io(parent, tag)
        .map_err(|e| EmuError::io(format!("creating a folder in {}", parent.display()), &e))
}

fn unique_dir_io(parent: &Path, tag: &str) -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = parent.join(format!(
        ".{tag}-{}-{}-{nanos}",
        std::process::id(),
        NONCE.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// Removes a build directory when dropped.
struct BuildDir(PathBuf);

impl Drop for BuildDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builds (or finds in the cache) one variant and loads it.
pub(crate) fn build(
    inputs: &BuildInputs,
    variant: Variant,
) -> Result<(Loaded, KernelInfo), EmuError> {
    let kernel = inputs.expression.clone();
    let (user_flags, option_dirs, fp_contract) = host_options(&inputs.options);
    let mut dirs = inputs.include_dirs.clone();
    dirs.extend(option_dirs);
    let headers = collect_headers(&inputs.source, &dirs);
    let (tu, mut info) = translation_unit(inputs, variant, &headers);

    let mut flags: Vec<String> = BASE_FLAGS.iter().map(|s| s.to_string()).collect();
    if !fp_contract {
        flags.push("-ffp-contract=off".to_string());
    }
    if variant == Variant::Checked {
        flags.push("-DCUNUMPY_BOUNDS_CHECK".to_string());
    }
    flags.extend(
        inputs
            .include_dirs
            .iter()
            .map(|d| format!("-I{}", d.display())),
    );
    flags.extend(user_flags);

    let mut key = CacheKey::new("emulator");
    key.add("crate-version", env!("CARGO_PKG_VERSION").as_bytes())
        .add("translation-unit", tu.as_bytes())
        .add("compiler", inputs.compiler.program.as_bytes())
        .add_list("compiler-args", &inputs.compiler.prefix_args)
        .add("compiler-version", inputs.compiler.version.as_bytes())
        .add_list("flags", &flags);
    for (path, content) in &headers {
        key.add("header-path", path.to_string_lossy().as_bytes())
            .add("header", content);
    }
    let hex = key.hex();

    // A hit in the disk cache.
    if let Some(dir) = &inputs.cache_dir {
        if let Some(hit) = cached_library(dir, &hex) {
            if let Ok(loaded) = Loaded::open_slot(
                &hit.load,
                &hit.path,
                &kernel,
                CacheOutcome::DiskHit,
                inputs.slot,
            ) {
                info.cached_in = Some(dir.clone());
                return Ok((loaded, info));
            }
        }
    }
    let built = compile_into_cache(
        &inputs.compiler,
        &tu,
        &flags,
        true,
        inputs.cache_dir.as_deref(),
        &hex,
    )
    .map_err(|e| match e {
        BuildFailure::Other(e) => e,
        BuildFailure::Compiler {
            command,
            mut stderr,
        } => {
            if variant == Variant::Checked {
                stderr.push_str(
                    "\n(note: this is the bounds-checked build, in which pointer parameters are \
checked pointer objects; a function template that deduces T from a T* argument needs `&p[0]` \
or `+p`, and `auto*` cannot hold one)",
                );
            }
            EmuError::Compile {
                kernel: kernel.clone(),
                command,
                stderr,
            }
        }
    })?;
    info.compile_seconds = built.seconds;
    info.cached_in.clone_from(&built.cached_in);
    Ok((
        Loaded::open_slot(
            &built.load,
            &built.path,
            &kernel,
            CacheOutcome::Compiled,
            inputs.slot,
        )?,
        info,
    ))
}

/// The library stored under `hex` in a cache directory, when its entry (core's one verified
/// format, `<hex>.cnk`) is whole and its SHA-256 checks out; a damaged entry, or a bare `.so` of
/// an older cunumpy, is a miss. The verified bytes are written to a private file to be loaded,
/// so that what is loaded is what was checked.
pub(crate) fn cached_library(dir: &Path, hex: &str) -> Option<Built> {
    let entry = entry_path(dir, hex);
    let bytes = read_verified(&entry, |payload| Some(payload.to_vec()))?;
    let work = BuildDir(unique_dir(dir, "cunumpy-emu-build").ok()?);
    let load = work.0.join(format!("{hex}.so"));
    write_atomic(&load, &bytes).ok()?;
    Some(Built {
        load,
        path: entry,
        seconds: 0.0,
        cached_in: Some(dir.to_path_buf()),
        _dir: Some(work),
    })
}

/// Why a build produced no library.
pub(crate) enum BuildFailure {
    /// The compiler ran and failed.
    Compiler {
        command: String,
        stderr: String,
    },
    Other(EmuError),
}

impl From<EmuError> for BuildFailure {
    fn from(e: EmuError) -> Self {
        BuildFailure::Other(e)
    }
}

/// A library ready to load: the file to load (its private folder lives as long as this) and
/// the path shown as the library's (its cache entry, or the build output when there is no
/// cache).
pub(crate) struct Built {
    pub load: PathBuf,
    pub path: PathBuf,
    /// How long the compiler ran.
    pub seconds: f64,
    /// The cache folder it was stored in (None: not stored).
    pub cached_in: Option<PathBuf>,
    _dir: Option<BuildDir>,
}

/// Compiles a translation unit into a shared library, in a private directory, and writes it into
/// the cache directory as a verified entry (`cunumpy_core::disk`) under `hex`. `cuda_stubs` puts
/// empty stand-ins for the CUDA runtime headers on the include path.
pub(crate) fn compile_into_cache(
    compiler: &EmuCompiler,
    tu: &str,
    flags: &[String],
    cuda_stubs: bool,
    cache_dir: Option<&Path>,
    hex: &str,
) -> Result<Built, BuildFailure> {
    // Build in a private directory (inside the cache directory, so the rename is atomic). A
    // cache folder that cannot be used (a file, read-only, ...) is replaced by a temporary one,
    // with one warning (`crate::cache_dir::take_warnings`).
    let started = Instant::now();
    let mut cache_dir = cache_dir.map(Path::to_path_buf);
    let work = match cache_dir.as_deref() {
        Some(d) => match std::fs::create_dir_all(d).and_then(|()| {
            sweep_stale_builds(d);
            unique_dir_io(d, "cunumpy-emu-build")
        }) {
            Ok(w) => w,
            Err(e) => {
                let fallback = fallback_cache(d, &e.to_string());
                cache_dir.clone_from(&fallback);
                let parent = fallback.unwrap_or_else(std::env::temp_dir);
                unique_dir(&parent, "cunumpy-emu-build")?
            }
        },
        None => unique_dir(&std::env::temp_dir(), "cunumpy-emu-build")?,
    };
    let work = BuildDir(work);
    let stubs = work.0.join("stubs");
    if cuda_stubs {
        std::fs::create_dir_all(&stubs)
            .map_err(|e| EmuError::io(format!("creating {}", stubs.display()), &e))?;
        for name in STUB_HEADERS {
            let text = if name == "math_constants.h" {
                MATH_CONSTANTS
            } else {
                "#pragma once\n"
            };
            let path = stubs.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| EmuError::io(format!("creating {}", parent.display()), &e))?;
            }
            std::fs::write(path, text)
                .map_err(|e| EmuError::io(format!("writing {}", stubs.display()), &e))?;
        }
    }
    let src_path = work.0.join(format!("{hex}.cpp"));
    std::fs::write(&src_path, tu)
        .map_err(|e| EmuError::io(format!("writing {}", src_path.display()), &e))?;
    let out_path = work.0.join(format!("{hex}.so"));

    let mut cmd = Command::new(&compiler.program);
    cmd.args(&compiler.prefix_args).args(flags);
    if cuda_stubs {
        cmd.arg(format!("-I{}", stubs.display()));
    }
    cmd.arg("-x")
        .arg("c++")
        .arg(&src_path)
        .arg("-o")
        .arg(&out_path);
    let command = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| EmuError::io(format!("running {}", compiler.program), &e))?;
    if !out.status.success() {
        return Err(BuildFailure::Compiler {
            command,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }

    let seconds = started.elapsed().as_secs_f64();
    if let Some(dir) = cache_dir.as_deref() {
        let bytes = std::fs::read(&out_path)
            .map_err(|e| EmuError::io(format!("reading {}", out_path.display()), &e))?;
        let entry = entry_path(dir, hex);
        match write_verified(&entry, &bytes) {
            Ok(()) => {
                return Ok(Built {
                    load: out_path,
                    path: entry,
                    seconds,
                    cached_in: Some(dir.to_path_buf()),
                    _dir: Some(work),
                })
            }
            // a damaged entry (a folder where the library goes, say): use the build as it is
            Err(e) => {
                fallback_cache(dir, &format!("cannot store {}: {e}", entry.display()));
            }
        }
    }
    Ok(Built {
        load: out_path.clone(),
        path: out_path,
        seconds,
        cached_in: None,
        _dir: Some(work),
    })
}

/// The temporary folder that replaces an unusable cache folder `dir` for the rest of the
/// process (None when it cannot be made either); warns once per folder.
fn fallback_cache(dir: &Path, why: &str) -> Option<PathBuf> {
    let fallback = std::env::temp_dir().join(format!(
        "cunumpy-emulation-fallback-{}",
        cunumpy_core::config::var_os("USER")
            .map(|u| u.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let usable = std::fs::create_dir_all(&fallback).is_ok() && fallback != dir;
    crate::cache_dir::warn_once(
        dir,
        format!(
            "cunumpy: the emulation cache folder {} cannot be used ({why}); using {} for this \
process instead. Repair or remove that folder, or set {} to a writable folder (it moves the \
emulation cache; CUNUMPY_CACHE_DIR moves the GPU kernel cache).",
            dir.display(),
            if usable {
                fallback.display().to_string()
            } else {
                "no disk cache".to_string()
            },
            cunumpy_core::config::EMULATION_CACHE
        ),
    );
    usable.then_some(fallback)
}

/// Removes build folders (`.cunumpy-emu-build-<pid>-...`) that a killed process left in a cache
/// folder: those of processes no longer running (Linux), or older than a day. Once per folder
/// and process.
fn sweep_stale_builds(dir: &Path) {
    static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    {
        let mut swept = cunumpy_core::sync::lock(&SWEPT);
        if swept.iter().any(|d| d == dir) {
            return;
        }
        swept.push(dir.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let proc = Path::new("/proc");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(".cunumpy-emu-build-") else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let gone = match pid {
            Some(pid) if proc.is_dir() => {
                pid != std::process::id() && !proc.join(pid.to_string()).exists()
            }
            _ => false,
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 24 * 3600);
        if gone || old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_options_pass_through_only_host_ones() {
        let opts: Vec<String> = [
            "-DN=3",
            "-I",
            "/x",
            "--use_fast_math",
            "-arch=sm_90",
            "--std=c++20",
            "-ffp-contract=fast",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (flags, dirs, fp) = host_options(&opts);
        assert_eq!(
            flags,
            vec!["-DN=3", "-I/x", "-std=c++20", "-ffp-contract=fast"]
        );
        assert_eq!(dirs, vec![PathBuf::from("/x")]);
        assert!(fp);
    }
}
