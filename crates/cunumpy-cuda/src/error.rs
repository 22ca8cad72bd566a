//! The crate's one error type.

use std::fmt;

/// Everything that can go wrong in this crate. `Clone` so a failed one-time load can be kept
/// and reported again on every later call.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    /// No candidate file of a library could be opened.
    #[error("could not load {library}; tried:\n{}", format_attempts(.attempts))]
    LibraryNotFound {
        /// `"libcuda"` or `"libnvrtc"`.
        library: &'static str,
        /// Each place tried, with why it failed (`"/path/libnvrtc.so.13: not found"`).
        attempts: Vec<String>,
    },
    /// The library was opened but lacks a function this crate needs.
    #[error("{library} does not export {symbol}: {reason}")]
    MissingSymbol {
        /// The file that was opened.
        library: String,
        /// The missing C symbol.
        symbol: String,
        /// The loader's message.
        reason: String,
    },
    /// A CUDA driver call returned an error code.
    #[error("{function} failed: {name} ({code}): {description}")]
    Driver {
        /// The driver function, e.g. `"cuModuleLoadData"`.
        function: &'static str,
        /// The `CUresult` code.
        code: i32,
        /// From `cuGetErrorName`, e.g. `"CUDA_ERROR_INVALID_VALUE"`.
        name: String,
        /// From `cuGetErrorString`.
        description: String,
    },
    /// A kernel launch (or the synchronize right after it) failed.
    #[error(
        "launch of kernel `{kernel}` with grid {grid:?}, block {block:?}, shared memory \
         {shared} bytes failed in {function}: {name} ({code}): {description}"
    )]
    Launch {
        /// The kernel's name.
        kernel: String,
        /// Grid dimensions.
        grid: [u32; 3],
        /// Block dimensions.
        block: [u32; 3],
        /// Dynamic shared memory, in bytes.
        shared: u32,
        /// The driver function that reported it.
        function: &'static str,
        /// The `CUresult` code.
        code: i32,
        /// The code's name.
        name: String,
        /// The code's description.
        description: String,
    },
    /// A module image was rejected by the driver (with the JIT error log when there is one).
    #[error("cuModuleLoadDataEx failed: {name} ({code}): {description}{}", format_log(.log))]
    ModuleLoad {
        /// The `CUresult` code.
        code: i32,
        /// The code's name.
        name: String,
        /// The code's description.
        description: String,
        /// The JIT error log (empty for a CUBIN).
        log: String,
    },
    /// An NVRTC call other than the compile itself returned an error code.
    #[error("{function} failed: {name} ({code})")]
    Nvrtc {
        /// The NVRTC function.
        function: &'static str,
        /// The `nvrtcResult` code.
        code: i32,
        /// From `nvrtcGetErrorString`.
        name: String,
    },
    /// NVRTC rejected a program.
    #[error(transparent)]
    Compile(Box<CompileError>),
    /// A caller passed a value this crate cannot use.
    #[error("{0}")]
    InvalidArgument(String),
    /// A file operation failed (kernel cache, header reading).
    #[error("{context}: {message}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The operating system's message.
        message: String,
    },
}

impl CudaError {
    /// The CUDA or NVRTC result code, when the error came from one.
    pub fn code(&self) -> Option<i32> {
        match self {
            CudaError::Driver { code, .. }
            | CudaError::Launch { code, .. }
            | CudaError::ModuleLoad { code, .. }
            | CudaError::Nvrtc { code, .. } => Some(*code),
            CudaError::Compile(err) => Some(err.code),
            _ => None,
        }
    }

    /// The compile error, when NVRTC rejected the program.
    pub fn as_compile_error(&self) -> Option<&CompileError> {
        match self {
            CudaError::Compile(err) => Some(err),
            _ => None,
        }
    }

    /// Turns a driver error into a [`CudaError::Launch`] naming the kernel and the launch shape
    /// (used for the synchronize after a launch in debug mode). Other errors are returned as
    /// they are.
    pub fn in_launch(self, kernel: &str, grid: [u32; 3], block: [u32; 3], shared: u32) -> Self {
        match self {
            CudaError::Driver {
                function,
                code,
                name,
                description,
            } => CudaError::Launch {
                kernel: kernel.to_string(),
                grid,
                block,
                shared,
                function,
                code,
                name,
                description,
            },
            other => other,
        }
    }

    pub(crate) fn io(context: impl Into<String>, err: &std::io::Error) -> Self {
        CudaError::Io {
            context: context.into(),
            message: err.to_string(),
        }
    }
}

fn format_attempts(attempts: &[String]) -> String {
    if attempts.is_empty() {
        return "  (no candidate locations)".to_string();
    }
    attempts
        .iter()
        .map(|a| format!("  {a}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn format_log(log: &str) -> String {
    if log.trim().is_empty() {
        String::new()
    } else {
        format!("\n{}", log.trim_end())
    }
}

/// NVRTC could not compile a program: everything needed to see why.
#[derive(Debug, Clone)]
pub struct CompileError {
    /// The program (kernel) name given to NVRTC.
    pub program_name: String,
    /// The `nvrtcResult` of `nvrtcCompileProgram` (6 = `NVRTC_ERROR_COMPILATION`).
    pub code: i32,
    /// Its name, from `nvrtcGetErrorString`.
    pub reason: String,
    /// The full NVRTC log.
    pub log: String,
    /// Every option passed to NVRTC, including the architecture option this crate adds.
    pub options: Vec<String>,
    /// The source with numbered lines (`"   1 | ..."`).
    pub numbered_source: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NVRTC could not compile `{}` ({})",
            self.program_name, self.reason
        )?;
        let log = self.log.trim_end();
        if !log.is_empty() {
            write!(f, "\n{log}")?;
        }
        write!(f, "\noptions: {}", self.options.join(" "))
    }
}

impl std::error::Error for CompileError {}

/// Numbers the lines of a source for error messages: `"   1 | first line"`.
pub fn number_lines(source: &str) -> String {
    let count = source.lines().count().max(1);
    let width = count.to_string().len().max(4);
    let mut out = String::with_capacity(source.len() + count * (width + 4));
    for (i, line) in source.lines().enumerate() {
        out.push_str(&format!("{:>width$} | {line}\n", i + 1));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numbered_lines() {
        let s = number_lines("a\nb\n");
        assert_eq!(s, "   1 | a\n   2 | b\n");
    }

    #[test]
    fn compile_error_display_names_kernel_log_and_options() {
        let err = CompileError {
            program_name: "saxpy".into(),
            code: 6,
            reason: "NVRTC_ERROR_COMPILATION".into(),
            log: "saxpy.cu(3): error: identifier \"y\" is undefined\n".into(),
            options: vec!["-std=c++17".into(), "--gpu-architecture=sm_90".into()],
            numbered_source: number_lines("x"),
        };
        let text = CudaError::Compile(Box::new(err)).to_string();
        assert!(text.contains("`saxpy`"));
        assert!(text.contains("identifier \"y\" is undefined"));
        assert!(text.contains("options: -std=c++17 --gpu-architecture=sm_90"));
    }

    #[test]
    fn launch_context_is_added_to_driver_errors() {
        let err = CudaError::Driver {
            function: "cuStreamSynchronize",
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            description: "an illegal memory access was encountered".into(),
        }
        .in_launch("k", [2, 1, 1], [128, 1, 1], 0);
        let text = err.to_string();
        assert!(text.contains("kernel `k`"), "{text}");
        assert!(text.contains("[128, 1, 1]"), "{text}");
        assert_eq!(err.code(), Some(700));
    }
}
