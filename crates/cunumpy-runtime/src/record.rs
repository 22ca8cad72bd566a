//! The ledger entry of a launch (`cunumpy.profiling`): one `launch` event per kernel launch,
//! on a GPU or on the emulated device.

use cunumpy_core::launch::LaunchShape;
use cunumpy_core::ledger::{Event, EventKind, Ledger};

/// Whether launches are being recorded (checked before the caller finds the call site). Not
/// while a graph is captured on this thread: a captured launch does not run (its replays
/// are recorded, as graph launches).
#[inline]
pub fn recording() -> bool {
    Ledger::global().is_recording() && !crate::graph::capturing()
}

/// Records one launch of `name` with `shape`, made from `site` (the user's `file:line`).
pub fn launch(name: &str, shape: &LaunchShape, site: String) {
    Ledger::global().record(Event {
        kind: EventKind::Launch,
        description: format!(
            "kernel '{name}' grid {:?} block {:?}",
            shape.grid, shape.block
        ),
        site,
        nbytes: None,
        blocking: false,
        implicit: false,
        time_ns: 0, // stamped by `Ledger::record`
        thread: 0,
        kernels: 0,
    });
}

/// Records one copy of `nbytes` bytes into (`to_device`) or out of a kernel's `__constant__`
/// variable `symbol`, made from `site`: a host-to-device or device-to-host copy like any other.
pub fn constant_copy(kernel: &str, symbol: &str, nbytes: usize, to_device: bool, site: String) {
    let (kind, what) = if to_device {
        (EventKind::ToDevice, "set_constant")
    } else {
        (EventKind::ToHost, "get_constant")
    };
    Ledger::global().record(Event {
        kind,
        description: format!("{what}: kernel '{kernel}' __constant__ '{symbol}'"),
        site,
        nbytes: Some(nbytes as u64),
        blocking: true,
        implicit: false,
        time_ns: 0, // stamped by `Ledger::record`
        thread: 0,
        kernels: 0,
    });
}
