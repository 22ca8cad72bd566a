//! The PyO3 module `cunumpy._core`: conversions between Python objects and the Rust crates'
//! types, the caches that must hold Python references (a kernel's last call, a fused
//! function's remembered calls and recycled outputs), vectorcall, and error mapping. What a
//! call does below that is `cunumpy-runtime`'s.

use pyo3::prelude::*;

mod arrays;
mod cupy_stream;
mod dispatch;
mod emulate;
mod errors;
mod fused_call;
mod fusion;
mod graph;
mod held;
mod host_loops;
mod host_pool;
mod kernel;
mod kernel_config;
mod layout;
mod ledger;
mod metal;
mod port;
mod probes;
mod source;
mod vectorcall;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    ledger::register(m)?;
    source::register(m)?;
    layout::register(m)?;
    kernel::register(m)?;
    fusion::register(m)?;
    m.add_class::<fused_call::FusedDispatcher>()?;
    fused_call::FusedDispatcher::register_vectorcall(m.py())?;
    m.add_class::<dispatch::KernelDispatcher>()?;
    dispatch::KernelDispatcher::register_vectorcall(m.py())?;
    emulate::register(m)?;
    metal::register(m)?;
    host_pool::register(m)?;
    host_loops::register(m)?;
    vectorcall::register(m)?;
    cupy_stream::register(m)?;
    port::register(m)?;
    graph::register(m)?;
    Ok(())
}
