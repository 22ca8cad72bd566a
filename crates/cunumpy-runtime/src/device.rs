//! The device a launch runs on, and how it is chosen.
//!
//! A [`Device`] is a CUDA device (an ordinal of the driver) or the emulated CUDA device
//! (`cunumpy-emu`: CUDA C run on the CPU, behind the fake CuPy). Callers ask it for its limits
//! and SM count, and hand it to [`crate::Kernel`] and [`crate::FusedPlan`], which compile,
//! load and launch on whatever it is; a later device kind (an emulated or real Metal device)
//! is one more variant here and one more arm in those two, not a change to their callers.
//!
//! Whether launches go to the emulated device is decided here, once ([`set_emulated`]).

use crate::emulated;
use crate::RuntimeError;
use cunumpy_core::launch::DeviceLimits;
use cunumpy_core::sync::lock;
use cunumpy_cuda::{CudaError, Driver};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Where a launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// A CUDA device, by ordinal.
    Cuda(i32),
    /// The emulated CUDA device (one per process).
    Emulated,
}

/// Whether launches go to the emulated device (the fake CuPy is installed).
static EMULATED: AtomicBool = AtomicBool::new(false);

/// Sends every later launch to the emulated device (`true`) or to the CUDA driver (`false`).
pub fn set_emulated(on: bool) {
    EMULATED.store(on, Ordering::Relaxed);
}

/// Whether launches go to the emulated device.
#[inline]
pub fn emulated() -> bool {
    EMULATED.load(Ordering::Relaxed)
}

impl Device {
    /// The device of the calling thread: the emulated one when it is switched on, else the
    /// device of the thread's current CUDA context (the primary context of device 0 is made
    /// current on a thread that has none).
    pub fn current() -> Result<Device, CudaError> {
        if emulated() {
            return Ok(Device::Emulated);
        }
        Ok(Device::Cuda(launch_device(Driver::get()?)?))
    }

    /// The device of the calling thread as far as it is known without loading the driver or
    /// making a context current: None when neither is there yet.
    pub fn current_if_known() -> Option<Device> {
        if emulated() {
            return Some(Device::Emulated);
        }
        Driver::get_if_loaded()
            .and_then(|d| d.current_device().ok())
            .map(Device::Cuda)
    }

    /// The device ordinal array arguments are checked against (0 on the emulated device).
    pub fn ordinal(&self) -> i32 {
        match self {
            Device::Cuda(ordinal) => *ordinal,
            Device::Emulated => 0,
        }
    }

    /// The launch limits the device enforces.
    pub fn limits(&self) -> Result<DeviceLimits, CudaError> {
        match self {
            Device::Cuda(ordinal) => device_limits(Driver::get()?, *ordinal),
            Device::Emulated => Ok(emulated::LIMITS),
        }
    }

    /// The number of streaming multiprocessors (what a grid-stride launch is sized by).
    pub fn sm_count(&self) -> Result<u32, RuntimeError> {
        match self {
            Device::Cuda(ordinal) => {
                let info = Driver::get().and_then(|d| d.device_info(*ordinal));
                Ok(info.map_err(|e| RuntimeError::cuda("", e))?.sm_count)
            }
            Device::Emulated => emulated::sm_count(),
        }
    }
}

/// The calling thread's CUDA device, making the primary context of device 0 current on a
/// thread that has none.
pub fn launch_device(driver: &Driver) -> Result<i32, CudaError> {
    if let Some((_, device)) = current_context_device(driver)? {
        return Ok(device);
    }
    let context = driver.ensure_context(0)?;
    device_of(driver, context.as_raw() as usize)
}

/// The calling thread's current context and its device; None when it has no context.
#[inline]
pub fn current_context_device(driver: &Driver) -> Result<Option<(usize, i32)>, CudaError> {
    match driver.current_context()? {
        Some(c) => {
            let raw = c.as_raw() as usize;
            Ok(Some((raw, device_of(driver, raw)?)))
        }
        None => Ok(None),
    }
}

/// The device of `context`, the calling thread's current context.
#[inline]
fn device_of(driver: &Driver, context: usize) -> Result<i32, CudaError> {
    thread_local! {
        // (context handle, its device): asking the driver for the device of an unchanged
        // context on every launch is wasted work.
        static KNOWN: Cell<(usize, i32)> = const { Cell::new((0, 0)) };
    }
    let (known_ctx, known_dev) = KNOWN.with(|k| k.get());
    if known_ctx == context && context != 0 {
        return Ok(known_dev);
    }
    let device = driver.current_device()?;
    KNOWN.with(|k| k.set((context, device)));
    Ok(device)
}

/// A CUDA device's launch limits, asked of the driver once per device.
pub fn device_limits(driver: &Driver, device: i32) -> Result<DeviceLimits, CudaError> {
    static CACHE: Mutex<Vec<(i32, DeviceLimits)>> = Mutex::new(Vec::new());
    if let Some((_, l)) = lock(&CACHE).iter().find(|(d, _)| *d == device) {
        return Ok(*l);
    }
    let info = driver.device_info(device)?;
    let limits = DeviceLimits {
        max_block: info.max_block_dims,
        max_grid: info.max_grid_dims,
        max_threads_per_block: info.max_threads_per_block,
        shared_per_block: info.shared_mem_per_block,
        shared_per_block_optin: info.shared_mem_per_block_optin,
    };
    lock(&CACHE).push((device, limits));
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_emulated_device_is_chosen_by_the_switch() {
        set_emulated(true);
        assert_eq!(Device::current().ok(), Some(Device::Emulated));
        assert_eq!(Device::current_if_known(), Some(Device::Emulated));
        let limits = Device::Emulated.limits().ok();
        assert_eq!(limits.map(|l| l.max_threads_per_block), Some(1024));
        assert_eq!(Device::Emulated.ordinal(), 0);
        set_emulated(false);
        assert_ne!(Device::current_if_known(), Some(Device::Emulated));
    }
}
