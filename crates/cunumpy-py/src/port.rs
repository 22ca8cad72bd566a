//! Binding of `cunumpy-port` (host kernel -> CUDA C): converts the arguments and the result,
//! and turns a refusal into `cunumpy.exceptions.CudaPortError` / `CudaPortRaceError` carrying
//! the function, line, construct and array.

use crate::errors;
use cunumpy_port::{Options, PortErrorKind};
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyfunction]
#[pyo3(signature = (tree_json, source, kernel, *, arg_types=Vec::new(), parallel_loop=None))]
fn _port_translate<'py>(
    py: Python<'py>,
    tree_json: &str,
    source: &str,
    kernel: &str,
    arg_types: Vec<(String, String)>,
    parallel_loop: Option<u32>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = Options {
        kernel: kernel.to_string(),
        arg_types,
        parallel_loop,
    };
    let t = match cunumpy_port::translate(tree_json, source, &opts) {
        Ok(t) => t,
        Err(e) => {
            let class = match e.kind {
                PortErrorKind::Race => "CudaPortRaceError",
                PortErrorKind::Unsupported => "CudaPortUnsupportedError",
                PortErrorKind::Input => "CudaPortInputError",
            };
            let err = errors::raise(py, class, e.to_string());
            let value = err.value(py);
            value.setattr("function", &e.function)?;
            value.setattr("line", e.line)?;
            value.setattr("construct", &e.construct)?;
            value.setattr("array", e.array.clone())?;
            return Err(err);
        }
    };
    let d = PyDict::new(py);
    d.set_item("source", t.source)?;
    d.set_item("kernel", t.kernel)?;
    d.set_item("params", t.params)?;
    d.set_item("loop_line", t.loop_line)?;
    d.set_item("loop_var", t.loop_var)?;
    d.set_item("collapsed", t.collapsed)?;
    d.set_item("n_threads", t.n_threads)?;
    let writes: Vec<(String, u32, &str)> = t
        .writes
        .into_iter()
        .map(|w| (w.array, w.line, w.how))
        .collect();
    d.set_item("writes", writes)?;
    d.set_item("helpers", t.helpers)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_port_translate, m)?)?;
    Ok(())
}
