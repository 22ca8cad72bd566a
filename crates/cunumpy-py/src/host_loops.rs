//! Python mapping of the fusion crate's compiled CPU loop settings and status (no logic).

use std::time::Duration;

use cunumpy_fusion::{
    host_loop_settings, host_loop_status, set_host_loops, wait_for_host_loops, HostLoopMode,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn mode_name(m: HostLoopMode) -> &'static str {
    match m {
        HostLoopMode::Off => "off",
        HostLoopMode::Background => "background",
        HostLoopMode::Sync => "sync",
    }
}

/// Sets the mode (`"off"`, `"background"`, `"sync"`) and the fewest points that start a build;
/// returns the previous `(mode, min_points)`.
#[pyfunction]
#[pyo3(signature = (mode, min_points))]
fn _set_host_loops(mode: &str, min_points: usize) -> PyResult<(&'static str, usize)> {
    let m = match mode {
        "off" => HostLoopMode::Off,
        "background" => HostLoopMode::Background,
        "sync" => HostLoopMode::Sync,
        other => {
            return Err(PyValueError::new_err(format!(
                "host_loops: mode must be 'off', 'background' or 'sync', not {other:?}"
            )))
        }
    };
    let (old, old_min) = host_loop_settings();
    set_host_loops(m, min_points);
    Ok((mode_name(old), old_min))
}

/// `{"mode", "min_points", "ready", "building", "failed", "runs"}`.
#[pyfunction]
fn _host_loop_status(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let (mode, min_points) = host_loop_settings();
    let s = host_loop_status();
    let d = PyDict::new(py);
    d.set_item("mode", mode_name(mode))?;
    d.set_item("min_points", min_points)?;
    d.set_item("ready", s.ready)?;
    d.set_item("building", s.building)?;
    d.set_item("failed", s.failed)?;
    d.set_item("runs", s.runs)?;
    Ok(d)
}

/// Waits (without the GIL) until no build runs, at most `timeout` seconds; whether none does.
#[pyfunction]
fn _wait_for_host_loops(py: Python<'_>, timeout: f64) -> bool {
    let t = Duration::from_secs_f64(timeout.clamp(0.0, 1e6));
    py.detach(|| wait_for_host_loops(t))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_host_loops, m)?)?;
    m.add_function(wrap_pyfunction!(_host_loop_status, m)?)?;
    m.add_function(wrap_pyfunction!(_wait_for_host_loops, m)?)?;
    Ok(())
}
