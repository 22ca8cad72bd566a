//! The crate's one error type.

/// What went wrong inside a running kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The kernel called `__trap()` (or `__brkpt()`); the shipped headers' bounds checks do.
    Trap,
    /// An access through a pointer parameter fell outside the byte range given in
    /// [`LaunchOptions::bounds`](crate::LaunchOptions::bounds).
    OutOfBounds,
    /// An `assert` failed.
    Assert,
    /// Threads wait at a barrier or warp intrinsic that the others never reach.
    Deadlock,
    /// A warp intrinsic was used against its contract (mask without the calling lane, lanes of
    /// one warp at different intrinsics with one mask, a bad width).
    InvalidWarpOp,
    /// Two threads wrote one element of a pointer parameter with nothing ordering the writes
    /// (only with [`LaunchOptions::detect_races`](crate::LaunchOptions::detect_races)).
    Race,
    /// Anything else (a C++ exception, a barrier in loop mode, no memory for fiber stacks, an
    /// arithmetic fault, a fiber stack overflow).
    Other,
}

impl Fault {
    pub(crate) fn from_code(code: i32) -> Fault {
        match code {
            1 => Fault::Trap,
            2 => Fault::OutOfBounds,
            3 => Fault::Assert,
            4 => Fault::Deadlock,
            6 => Fault::InvalidWarpOp,
            7 => Fault::Race,
            _ => Fault::Other,
        }
    }
}

/// Errors of the emulator. Every message names the kernel where there is one.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmuError {
    /// No host C++ compiler could be run.
    #[error("no host C++ compiler found for CUDA emulation (tried {tried}); set CXX to one")]
    NoCompiler {
        /// The commands that were tried.
        tried: String,
    },
    /// The kernel's source does not compile as host C++.
    #[error("kernel '{kernel}' does not compile for emulation:\n{stderr}\ncommand: {command}")]
    Compile {
        /// The kernel expression.
        kernel: String,
        /// The compiler command line.
        command: String,
        /// The compiler's diagnostics.
        stderr: String,
    },
    /// The compiled library could not be loaded or lacks the launcher.
    #[error("kernel '{kernel}': cannot load the emulation library {path}: {message}")]
    Load {
        /// The kernel expression.
        kernel: String,
        /// The library file.
        path: String,
        /// The loader's message.
        message: String,
    },
    /// A file or process operation failed.
    #[error("{context}: {message}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The operating system's message.
        message: String,
    },
    /// The launch shape or options are not valid; nothing ran.
    #[error("kernel '{kernel}': invalid launch: {message}")]
    InvalidLaunch {
        /// The kernel expression.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// The kernel ran and faulted; the launch was abandoned (the process is fine).
    #[error("{message}")]
    Kernel {
        /// The kernel expression.
        kernel: String,
        /// The kind of fault.
        fault: Fault,
        /// The full message: kernel, thread, block and what happened.
        message: String,
    },
}

impl EmuError {
    pub(crate) fn io(context: impl Into<String>, err: &std::io::Error) -> EmuError {
        EmuError::Io {
            context: context.into(),
            message: err.to_string(),
        }
    }

    /// The fault, for errors raised by a running kernel.
    pub fn fault(&self) -> Option<Fault> {
        match self {
            EmuError::Kernel { fault, .. } => Some(*fault),
            _ => None,
        }
    }
}
