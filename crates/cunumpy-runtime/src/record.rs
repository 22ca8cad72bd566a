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
