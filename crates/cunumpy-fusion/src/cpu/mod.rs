//! The CPU executor of a plan: argument checks and the kernel loop (`executor`), the block
//! interpreter (`interp`), the compiled C++ loops that give its results bit for bit on large
//! exact kernels (`host_loops` builds them, `host_run` runs them), and the fold geometry and
//! per-kernel environment the interpreter and the compiled loops share (`shared`), and the
//! intermediate columns a plan keeps from one call for its next (`spares`).

pub(crate) mod executor;
pub(crate) mod host_loops;
pub(crate) mod host_run;
pub(crate) mod interp;
pub(crate) mod shared;
pub(crate) mod spares;
