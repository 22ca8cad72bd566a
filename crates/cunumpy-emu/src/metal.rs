//! Metal Shading Language kernels, written as MLX's `mx.fast.metal_kernel` takes them (a body, the
//! names of the inputs and outputs, an optional header), made into one CUDA-style kernel that the
//! CUDA emulator runs: the same prelude, fibers, checked pointers and disk cache.
//!
//! [`MetalKernelSource::translate`] writes a translation unit of three parts:
//!
//! - the Metal layer ([`METAL_PRELUDE`], `prelude/metal_emu.h`): MSL's types, `metal::` math,
//!   `threadgroup_barrier`, the SIMD-group functions and device atomics over the CUDA prelude;
//! - the user's header and body, rewritten token by token (every edit keeps the line count):
//!   `device`, `constant` and `thread` are dropped (all memory is host memory); a `threadgroup`
//!   declaration of storage becomes `__shared__` (one instance per threadgroup), a `threadgroup`
//!   qualifier of a pointer, reference or parameter is dropped; `#include <metal_*>` lines go;
//! - the signature MLX generates, as one `__global__` function: per input `const T* name` (a
//!   0-d input: `const T& name`) with `name_shape` (`const int*`), `name_strides`
//!   (`const int64_t*`) and `name_ndim` (`int`), per output `T* name` (`atomic<T>*` with
//!   atomic outputs), template arguments as C++ template parameters, and the thread attributes
//!   (`thread_position_in_grid`, `thread_index_in_simdgroup`, ...) as locals computed from the
//!   CUDA built-ins. The grid is MLX's: a number of threads, not of threadgroups; threads past
//!   its end do not run (the last threadgroup of a dimension is partial, as with Metal's
//!   `dispatchThreads`).
//!
//! The parameters of the launch are listed in [`MetalTranslation::params`], in order.

use std::ffi::c_void;

use std::path::Path;

use crate::compiler::EmuCompiler;
use crate::error::EmuError;
use crate::lexer::{lex, Kind};
use crate::library::{EmuLibrary, LaunchOptions};

/// The Metal layer of the emulator, compiled after the CUDA prelude.
pub const METAL_PRELUDE: &str = include_str!("../prelude/metal_emu.h");

/// Words whose presence means the kernel's threads must run as fibers (barriers, SIMD-group
/// functions, which rendezvous).
const FIBER_WORDS: [&str; 4] = ["threadgroup_barrier", "simdgroup_barrier", "simd_", "quad_"];

/// An input array of a Metal kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetalInput {
    /// The name in the kernel's source.
    pub name: String,
    /// Its MSL element type (`float`, `int32_t`, `float16_t`, ...).
    pub ty: String,
    /// Its number of dimensions (0: passed as `const T&`).
    pub ndim: usize,
}

/// An output array of a Metal kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetalOutput {
    /// The name in the kernel's source.
    pub name: String,
    /// Its MSL element type.
    pub ty: String,
}

/// A template argument (MLX's `template=[(name, value)]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TemplateArg {
    /// An `int` constant.
    Int(i64),
    /// A `bool` constant.
    Bool(bool),
    /// A type, by its MSL name.
    Type(String),
}

/// A Metal kernel as MLX takes it, with the element types and ranks of one call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetalKernelSource {
    /// The kernel's name (any text; made into an identifier).
    pub name: String,
    /// The body of the kernel function.
    pub source: String,
    /// Source placed before the kernel function (helpers, constants).
    pub header: String,
    /// The inputs, in call order.
    pub inputs: Vec<MetalInput>,
    /// The outputs, in call order.
    pub outputs: Vec<MetalOutput>,
    /// Outputs are `device atomic<T>*`.
    pub atomic_outputs: bool,
    /// Template arguments, in order.
    pub template: Vec<(String, TemplateArg)>,
}

/// One parameter of the translated kernel, in launch order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetalParam {
    /// Input `i`'s data (a pointer).
    Data(usize),
    /// Input `i`'s shape (`const int*`, one per dimension).
    Shape(usize),
    /// Input `i`'s strides in elements (`const int64_t*`, one per dimension).
    Strides(usize),
    /// Input `i`'s number of dimensions (`int`).
    Ndim(usize),
    /// Output `i` (a pointer).
    Output(usize),
    /// The grid in threads (`const unsigned*`, three values).
    Grid,
}

/// The CUDA-style source of a Metal kernel and how to launch it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetalTranslation {
    /// The translation unit (without the CUDA prelude, which the compiler adds).
    pub source: String,
    /// The kernel expression to launch (with its template arguments).
    pub expression: String,
    /// The parameters, in order.
    pub params: Vec<MetalParam>,
    /// Whether the threads must run as fibers (barriers or SIMD-group functions).
    pub needs_fibers: bool,
}

/// One array of a launch: host memory of `nbytes` bytes holding a C-contiguous array of `shape`.
#[derive(Debug, Clone)]
pub struct MetalBuffer {
    /// The first byte.
    pub ptr: *mut c_void,
    /// The byte length (the bound checked accesses are held to).
    pub nbytes: usize,
    /// The shape (its C-contiguous strides are passed as `name_strides`).
    pub shape: Vec<i64>,
}

/// Options of one emulated Metal launch (see [`LaunchOptions`]).
#[derive(Debug, Clone, Default)]
pub struct MetalLaunchOptions {
    /// Check every access through an input or output against its buffer.
    pub bounds: bool,
    /// Run the threads of each threadgroup in this seed's random order, switching at accesses.
    pub shuffle_seed: Option<u64>,
    /// Host threads running threadgroups at the same time (0 or 1: the caller's only).
    pub workers: usize,
}

impl MetalTranslation {
    /// Launches `lib` (built from this translation) over `grid` threads in threadgroups of
    /// `threadgroup` threads: ceil(grid / threadgroup) threadgroups per dimension, threads past
    /// the grid's end not run. A grid with a zero dimension runs nothing.
    ///
    /// # Safety
    /// Each buffer's `ptr` is valid host memory of `nbytes` bytes for the launch (inputs read,
    /// outputs read and written), untouched by other threads meanwhile; with `bounds` off, the
    /// kernel must stay inside them (with it on, an access outside is reported).
    pub unsafe fn launch(
        &self,
        lib: &EmuLibrary,
        inputs: &[MetalBuffer],
        outputs: &[MetalBuffer],
        grid: [u32; 3],
        threadgroup: [u32; 3],
        options: &MetalLaunchOptions,
    ) -> Result<(), EmuError> {
        let invalid = |message: String| EmuError::InvalidLaunch {
            kernel: self.expression.clone(),
            message,
        };
        if grid.contains(&0) {
            return Ok(());
        }
        if threadgroup.contains(&0) {
            return Err(invalid(format!(
                "threadgroup {threadgroup:?} has a zero dimension"
            )));
        }
        if lib.param_count() != self.params.len() {
            return Err(invalid(format!(
                "the library has {} parameters, the translation {}",
                lib.param_count(),
                self.params.len()
            )));
        }
        let shapes: Vec<Vec<i32>> = inputs
            .iter()
            .map(|b| {
                b.shape
                    .iter()
                    .map(|&d| i32::try_from(d).unwrap_or(i32::MAX))
                    .collect()
            })
            .collect();
        let strides: Vec<Vec<i64>> = inputs
            .iter()
            .map(|b| {
                let mut out = vec![1i64; b.shape.len()];
                for d in (0..b.shape.len().saturating_sub(1)).rev() {
                    out[d] = out[d + 1] * b.shape[d + 1].max(1);
                }
                out
            })
            .collect();
        let mut pointers: Vec<*mut c_void> = Vec::with_capacity(self.params.len());
        let mut ndims: Vec<i32> = Vec::with_capacity(inputs.len());
        let mut bounds: Vec<Option<usize>> = Vec::with_capacity(self.params.len());
        let grid_values = grid;
        for p in &self.params {
            let (ptr, bound): (*mut c_void, usize) = match *p {
                MetalParam::Data(i) => {
                    let b = inputs
                        .get(i)
                        .ok_or_else(|| invalid(format!("no input {i}")))?;
                    (b.ptr, b.nbytes)
                }
                MetalParam::Shape(i) => {
                    let s = shapes
                        .get(i)
                        .ok_or_else(|| invalid(format!("no input {i}")))?;
                    (s.as_ptr() as *mut c_void, s.len() * 4)
                }
                MetalParam::Strides(i) => {
                    let s = strides
                        .get(i)
                        .ok_or_else(|| invalid(format!("no input {i}")))?;
                    (s.as_ptr() as *mut c_void, s.len() * 8)
                }
                MetalParam::Ndim(i) => {
                    let s = shapes
                        .get(i)
                        .ok_or_else(|| invalid(format!("no input {i}")))?;
                    ndims.push(i32::try_from(s.len()).unwrap_or(i32::MAX));
                    (std::ptr::null_mut(), 0)
                }
                MetalParam::Output(i) => {
                    let b = outputs
                        .get(i)
                        .ok_or_else(|| invalid(format!("no output {i}")))?;
                    (b.ptr, b.nbytes)
                }
                MetalParam::Grid => (grid_values.as_ptr() as *mut c_void, 12),
            };
            pointers.push(ptr);
            bounds.push(match p {
                MetalParam::Ndim(_) => None,
                _ => Some(bound),
            });
        }
        // `params[i]` points at parameter i's value: the pointer itself, or the ndim `int`.
        let mut slots: Vec<*mut c_void> = Vec::with_capacity(self.params.len());
        let mut k = 0;
        for (i, p) in self.params.iter().enumerate() {
            if matches!(p, MetalParam::Ndim(_)) {
                slots.push((&mut ndims[k] as *mut i32).cast::<c_void>());
                k += 1;
            } else {
                slots.push((&mut pointers[i] as *mut *mut c_void).cast::<c_void>());
            }
        }
        let blocks = [0, 1, 2].map(|d| grid[d].div_ceil(threadgroup[d]));
        let launch_options = LaunchOptions {
            shuffle_seed: options.shuffle_seed,
            bounds: options.bounds.then_some(bounds),
            workers: options.workers,
            force_fibers: self.needs_fibers,
            stack_size: 0,
            detect_races: false,
            constants: None,
        };
        // SAFETY: `slots[i]` points at parameter i's value, of the C type the translation
        // declares (a pointer, or the `int` ndim); `pointers`, `ndims`, `shapes`, `strides` and
        // `grid_values` live until the launch returns, and the buffers' validity is the
        // caller's contract.
        unsafe { lib.launch(slots.as_mut_ptr(), blocks, threadgroup, 0, &launch_options) }
    }
}

/// The host compiler options of every Metal translation (MSL's `float2(a, b)` needs C++20's
/// parenthesised aggregate initialisation).
pub const METAL_OPTIONS: [&str; 1] = ["-std=c++20"];

impl EmuCompiler {
    /// Translates and compiles a Metal kernel (through the same build and disk cache as CUDA
    /// kernels); returns the library and the translation that launches it.
    pub fn compile_metal(
        &self,
        kernel: &MetalKernelSource,
        cache_dir: Option<&Path>,
    ) -> Result<(EmuLibrary, MetalTranslation), EmuError> {
        let t = kernel.translate();
        let options: Vec<String> = METAL_OPTIONS.iter().map(|s| s.to_string()).collect();
        let lib = self.compile(&t.source, &t.expression, &options, &[], cache_dir)?;
        Ok((lib, t))
    }
}

/// The thread attributes MLX adds to the signature when the body uses them, as locals.
const ATTRIBUTES: &str = "\
  const unsigned* cnm_g = cunumpy_metal_grid;\n\
  const uint3 threads_per_grid = uint3{cnm_g[0], cnm_g[1], cnm_g[2]};\n\
  const uint3 grid_size = threads_per_grid;\n\
  const uint3 grid_origin = uint3{0u, 0u, 0u};\n\
  const uint3 thread_position_in_grid = uint3{blockIdx.x * blockDim.x + threadIdx.x, \
blockIdx.y * blockDim.y + threadIdx.y, blockIdx.z * blockDim.z + threadIdx.z};\n\
  if (thread_position_in_grid.x >= threads_per_grid.x || thread_position_in_grid.y >= threads_per_grid.y || \
thread_position_in_grid.z >= threads_per_grid.z) return;\n\
  const uint3 thread_position_in_threadgroup = uint3{threadIdx.x, threadIdx.y, threadIdx.z};\n\
  const uint3 threadgroup_position_in_grid = uint3{blockIdx.x, blockIdx.y, blockIdx.z};\n\
  const uint3 threadgroups_per_grid = uint3{gridDim.x, gridDim.y, gridDim.z};\n\
  const uint3 dispatch_threads_per_threadgroup = uint3{blockDim.x, blockDim.y, blockDim.z};\n\
  const uint3 threads_per_threadgroup = uint3{\
::min(blockDim.x, threads_per_grid.x - blockIdx.x * blockDim.x), \
::min(blockDim.y, threads_per_grid.y - blockIdx.y * blockDim.y), \
::min(blockDim.z, threads_per_grid.z - blockIdx.z * blockDim.z)};\n\
  const uint thread_index_in_threadgroup = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n\
  const uint cnm_n = threads_per_threadgroup.x * threads_per_threadgroup.y * threads_per_threadgroup.z;\n\
  const uint thread_index_in_simdgroup = thread_index_in_threadgroup % 32u;\n\
  const uint simdgroup_index_in_threadgroup = thread_index_in_threadgroup / 32u;\n\
  const uint threads_per_simdgroup = 32u;\n\
  const uint thread_execution_width = 32u;\n\
  const uint simdgroups_per_threadgroup = (cnm_n + 31u) / 32u;\n\
  const uint dispatch_simdgroups_per_threadgroup = (blockDim.x * blockDim.y * blockDim.z + 31u) / 32u;\n\
  const uint thread_index_in_quadgroup = thread_index_in_threadgroup % 4u;\n\
  const uint quadgroup_index_in_threadgroup = thread_index_in_threadgroup / 4u;\n\
  const uint quadgroups_per_threadgroup = (cnm_n + 3u) / 4u;\n";

/// The kernel name as a C identifier.
fn identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether MSL text uses a barrier or a SIMD-group function (conservative: comments count).
pub fn metal_needs_fibers(text: &str) -> bool {
    FIBER_WORDS.iter().any(|w| text.contains(w))
}

/// MSL made into C++ the Metal layer compiles (see the module's documentation); keeps lines.
pub fn rewrite_msl(src: &str) -> String {
    let toks = lex(src);
    let text = |i: usize| toks.get(i).map_or("", |t| &src[t.start..t.end]);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let word = &src[t.start..t.end];
        match t.kind {
            Kind::Directive => {
                let compact: String = word.split_whitespace().collect();
                if compact.starts_with("#include<metal_") || compact.starts_with("#include\"metal_")
                {
                    let lines = word.matches('\n').count();
                    edits.push((t.start, t.end, "\n".repeat(lines)));
                }
            }
            Kind::Ident if matches!(word, "device" | "constant" | "thread") => {
                // a member access (`x.device`) is a name, not a qualifier
                let prev = i.checked_sub(1).map_or("", text);
                if prev != "." && prev != "->" && prev != "::" {
                    edits.push((t.start, t.end, String::new()));
                }
            }
            Kind::Ident if word == "threadgroup" => {
                let prev = i.checked_sub(1).map_or("", text);
                let in_params = matches!(prev, "(" | "," | "<");
                let mut pointer = false;
                let mut j = i + 1;
                while j < toks.len() {
                    match text(j) {
                        "*" | "&" => {
                            pointer = true;
                            break;
                        }
                        ";" | "=" | "[" | "(" | ")" | "," | "{" => break,
                        _ => j += 1,
                    }
                }
                let replacement = if in_params || pointer {
                    String::new()
                } else {
                    "__shared__".to_string()
                };
                edits.push((t.start, t.end, replacement));
            }
            _ => {}
        }
    }
    let mut out = String::with_capacity(src.len());
    let mut at = 0;
    for (start, end, new) in edits {
        out.push_str(&src[at..start]);
        out.push_str(&new);
        at = end;
    }
    out.push_str(&src[at..]);
    out
}

impl MetalKernelSource {
    /// The kernel function's name in the translation unit.
    pub fn function_name(&self) -> String {
        format!("cunumpy_metal_{}", identifier(&self.name))
    }

    /// The translation unit and launch description (see the module's documentation).
    pub fn translate(&self) -> MetalTranslation {
        let function = self.function_name();
        let mut params = Vec::new();
        let mut decls = Vec::new();
        let mut locals = String::new();
        for (i, input) in self.inputs.iter().enumerate() {
            let MetalInput { name, ty, ndim } = input;
            if *ndim == 0 {
                decls.push(format!("const {ty}* cnm_scalar_{name}"));
                locals.push_str(&format!("  const {ty}& {name} = *cnm_scalar_{name};\n"));
            } else {
                decls.push(format!("const {ty}* {name}"));
            }
            decls.push(format!("const int* {name}_shape"));
            decls.push(format!("const int64_t* {name}_strides"));
            decls.push(format!("int {name}_ndim"));
            params.extend([
                MetalParam::Data(i),
                MetalParam::Shape(i),
                MetalParam::Strides(i),
                MetalParam::Ndim(i),
            ]);
        }
        for (i, output) in self.outputs.iter().enumerate() {
            let ty = if self.atomic_outputs {
                format!("metal::atomic<{}>", output.ty)
            } else {
                output.ty.clone()
            };
            decls.push(format!("{ty}* {}", output.name));
            params.push(MetalParam::Output(i));
        }
        decls.push("const unsigned* cunumpy_metal_grid".to_string());
        params.push(MetalParam::Grid);

        let mut template_params = Vec::new();
        let mut template_values = Vec::new();
        for (name, value) in &self.template {
            match value {
                TemplateArg::Int(v) => {
                    template_params.push(format!("int {name}"));
                    template_values.push(v.to_string());
                }
                TemplateArg::Bool(b) => {
                    template_params.push(format!("bool {name}"));
                    template_values.push(b.to_string());
                }
                TemplateArg::Type(t) => {
                    template_params.push(format!("typename {name}"));
                    template_values.push(t.clone());
                }
            }
        }
        let (template_line, expression) = if template_params.is_empty() {
            (String::new(), function.clone())
        } else {
            (
                format!("template <{}>\n", template_params.join(", ")),
                format!("{function}<{}>", template_values.join(", ")),
            )
        };
        let header_file = quoted(&format!("{}_header.metal", identifier(&self.name)));
        let body_file = quoted(&format!("{}.metal", identifier(&self.name)));
        let source = format!(
            "{METAL_PRELUDE}\n#line 1 {header_file}\n{header}\n\
#line 1 \"cunumpy_metal_signature\"\n\
{template_line}__global__ void {function}({decls}) {{\n{ATTRIBUTES}{locals}\
#line 1 {body_file}\n{body}\n}}\n",
            header = rewrite_msl(&self.header),
            decls = decls.join(", "),
            body = rewrite_msl(&self.source),
        );
        MetalTranslation {
            source,
            expression,
            params,
            needs_fibers: metal_needs_fibers(&self.source) || metal_needs_fibers(&self.header),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_are_dropped_and_threadgroup_storage_is_shared() {
        let src = "#include <metal_stdlib>\nconstant float K = 2;\n\
void f(threadgroup float* a, device const int* b) {}\n\
threadgroup float buf[64];\nthreadgroup float* p = buf;\nthread int t = s.device;";
        let out = rewrite_msl(src);
        assert_eq!(out.lines().count(), src.lines().count());
        assert!(!out.contains("metal_stdlib"));
        assert!(out.contains(" float K = 2;"));
        assert!(out.contains("void f( float* a,  const int* b)"));
        assert!(out.contains("__shared__ float buf[64];"));
        assert!(out.contains(" float* p = buf;"));
        assert!(out.contains(" int t = s.device;"));
    }

    #[test]
    fn signature_follows_mlx_conventions() {
        let k = MetalKernelSource {
            name: "my kernel".into(),
            source: "out[0] = x[0];".into(),
            header: String::new(),
            inputs: vec![
                MetalInput {
                    name: "x".into(),
                    ty: "float".into(),
                    ndim: 2,
                },
                MetalInput {
                    name: "a".into(),
                    ty: "int32_t".into(),
                    ndim: 0,
                },
            ],
            outputs: vec![MetalOutput {
                name: "out".into(),
                ty: "float".into(),
            }],
            atomic_outputs: true,
            template: vec![
                ("T".into(), TemplateArg::Type("float".into())),
                ("N".into(), TemplateArg::Int(3)),
                ("B".into(), TemplateArg::Bool(true)),
            ],
        };
        let t = k.translate();
        assert_eq!(t.expression, "cunumpy_metal_my_kernel<float, 3, true>");
        assert!(t.source.contains("template <typename T, int N, bool B>"));
        assert!(t.source.contains(
            "(const float* x, const int* x_shape, const int64_t* x_strides, int x_ndim, \
const int32_t* cnm_scalar_a, const int* a_shape, const int64_t* a_strides, int a_ndim, \
metal::atomic<float>* out, const unsigned* cunumpy_metal_grid)"
        ));
        assert!(t.source.contains("const int32_t& a = *cnm_scalar_a;"));
        assert_eq!(t.params.len(), 10);
        assert_eq!(t.params[8], MetalParam::Output(0));
        assert!(!t.needs_fibers);
    }

    #[test]
    fn barriers_and_simd_functions_need_fibers() {
        assert!(metal_needs_fibers(
            "threadgroup_barrier(mem_flags::mem_threadgroup);"
        ));
        assert!(metal_needs_fibers("float s = simd_sum(v);"));
        assert!(!metal_needs_fibers("out[i] = metal::exp(x[i]);"));
    }
}
