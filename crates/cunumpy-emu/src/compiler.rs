//! Finding the host C++ compiler, building an emulation library, and the on-disk cache.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use cunumpy_core::cache_key::{sha256_hex, CacheKey};
use cunumpy_core::disk::write_atomic;

use crate::error::EmuError;
use crate::includes::collect_headers;
use crate::loaded::{CacheOutcome, Loaded};
use crate::rewrite::{base_name, mentions_sync, rewrite};

/// The C++ prelude every kernel is compiled with.
pub const PRELUDE: &str = include_str!("../prelude/cunumpy_emu.h");

/// Headers that CUDA sources include and that have no meaning on the host: empty stand-ins.
const STUB_HEADERS: [&str; 6] = [
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
const BASE_FLAGS: [&str; 9] = [
    "-std=c++17",
    "-O2",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
    "-fno-math-errno",
    "-pthread",
    "-w",
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
        more = module_launchers(inputs, uses_sync),
    );
    (
        tu,
        KernelInfo {
            param_names: rewritten.param_names,
            uses_sync,
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

fn unique_dir(parent: &Path, tag: &str) -> Result<PathBuf, EmuError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = parent.join(format!(
        ".{tag}-{}-{}-{nanos}",
        std::process::id(),
        NONCE.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| EmuError::io(format!("creating {}", dir.display()), &e))?;
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
    let (tu, info) = translation_unit(inputs, variant, &headers);

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
        if let Some(so) = cached_library(dir, &hex) {
            if let Ok(loaded) = Loaded::open(&so, &kernel, CacheOutcome::DiskHit) {
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
    Ok((
        Loaded::open(&built.path, &kernel, CacheOutcome::Compiled)?,
        info,
    ))
}

/// The library stored under `hex` in a cache directory, when present and its SHA-256 checks out.
pub(crate) fn cached_library(dir: &Path, hex: &str) -> Option<PathBuf> {
    let so = dir.join(format!("{hex}.so"));
    let sum = dir.join(format!("{hex}.sha256"));
    let bytes = std::fs::read(&so).ok()?;
    let expected = std::fs::read_to_string(&sum).ok()?;
    (sha256_hex(&bytes) == expected.trim()).then_some(so)
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

/// A freshly built library; its build directory (when there is no cache) lives as long as it.
pub(crate) struct Built {
    pub path: PathBuf,
    _dir: Option<BuildDir>,
}

/// Compiles a translation unit into a shared library, in a private directory, and writes it into
/// the cache directory (atomically, with its SHA-256 beside it) under `hex`. `cuda_stubs` puts
/// empty stand-ins for the CUDA runtime headers on the include path.
pub(crate) fn compile_into_cache(
    compiler: &EmuCompiler,
    tu: &str,
    flags: &[String],
    cuda_stubs: bool,
    cache_dir: Option<&Path>,
    hex: &str,
) -> Result<Built, BuildFailure> {
    // Build in a private directory (inside the cache directory, so the rename is atomic).
    let parent = match cache_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| EmuError::io(format!("creating {}", d.display()), &e))?;
            d.to_path_buf()
        }
        None => std::env::temp_dir(),
    };
    let work = BuildDir(unique_dir(&parent, "cunumpy-emu-build")?);
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
            std::fs::write(stubs.join(name), text)
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

    match cache_dir {
        Some(dir) => {
            let bytes = std::fs::read(&out_path)
                .map_err(|e| EmuError::io(format!("reading {}", out_path.display()), &e))?;
            // the library, then its hash: a reader trusts a library only when both are whole
            // and agree (`cached_library`), and each is written atomically
            let so = dir.join(format!("{hex}.so"));
            let sum = dir.join(format!("{hex}.sha256"));
            write_atomic(&so, &bytes)
                .map_err(|e| EmuError::io(format!("writing {}", so.display()), &e))?;
            write_atomic(&sum, sha256_hex(&bytes).as_bytes())
                .map_err(|e| EmuError::io(format!("writing {}", sum.display()), &e))?;
            Ok(Built {
                path: so,
                _dir: None,
            })
        }
        None => Ok(Built {
            path: out_path,
            _dir: Some(work),
        }),
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
