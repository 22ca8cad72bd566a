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
use cunumpy_core::launch::DeviceLimits;
use cunumpy_core::sync::lock;
use cunumpy_cuda::{CudaError, Driver};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Where a launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// A CUDA device, by ordinal.
    Cuda(i32),
    /// The emulated CUDA device (one per process).
    Emulated,
}

/// The one emulation switch, two bits: [`DEVICE`] (launches go to the emulated device: the fake
/// CuPy is installed) and [`LAUNCHES`] (a `kernel_testing.emulated_launches()` block is open:
/// `CudaKernel` launches go to the binding's emulated launch, NumPy arrays standing for device
/// memory). One load answers "is any emulation on?" on the repeat-launch path.
static EMULATION: AtomicU8 = AtomicU8::new(0);
const DEVICE: u8 = 1;
const LAUNCHES: u8 = 2;

fn set_bit(bit: u8, on: bool) {
    if on {
        EMULATION.fetch_or(bit, Ordering::Relaxed);
    } else {
        EMULATION.fetch_and(!bit, Ordering::Relaxed);
    }
}

/// Sends every later launch to the emulated device (`true`) or to the CUDA driver (`false`).
pub fn set_emulated(on: bool) {
    set_bit(DEVICE, on);
}

/// Whether launches go to the emulated device.
#[inline]
pub fn emulated() -> bool {
    EMULATION.load(Ordering::Relaxed) & DEVICE != 0
}

/// Opens (`true`) or closes (`false`) emulated `CudaKernel` launches
/// (`kernel_testing.emulated_launches()`).
pub fn set_emulated_launches(on: bool) {
    set_bit(LAUNCHES, on);
}

/// Whether `CudaKernel` launches are emulated (`kernel_testing.emulated_launches()`).
#[inline]
pub fn emulated_launches() -> bool {
    EMULATION.load(Ordering::Relaxed) & LAUNCHES != 0
}

/// Whether either kind of emulation is on (one load; the repeat-launch path asks this).
#[inline]
pub fn any_emulation() -> bool {
    EMULATION.load(Ordering::Relaxed) != 0
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

    /// The number of streaming multiprocessors (what fused launch grids are sized by):
    /// asked of the driver once per CUDA device; the emulated device's setting.
    pub fn sm_count(&self) -> Result<u32, crate::RuntimeError> {
        match self {
            Device::Cuda(ordinal) => {
                cuda_sm_count(*ordinal).map_err(|e| crate::RuntimeError::cuda("", e))
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

/// A CUDA device's SM count, asked of the driver once per device.
fn cuda_sm_count(device: i32) -> Result<u32, CudaError> {
    static KNOWN: Mutex<Vec<(i32, u32)>> = Mutex::new(Vec::new());
    if let Some((_, n)) = lock(&KNOWN).iter().find(|(d, _)| *d == device) {
        return Ok(*n);
    }
    let n = Driver::get()?.device_info(device)?.sm_count;
    lock(&KNOWN).push((device, n));
    Ok(n)
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

        // the second bit of the switch is independent of the first (one test: the switch is
        // process-wide, and tests run in parallel)
        set_emulated_launches(true);
        assert!(emulated_launches() && any_emulation() && !emulated());
        set_emulated(true);
        set_emulated_launches(false);
        assert!(emulated() && any_emulation() && !emulated_launches());
        set_emulated(false);
        assert!(!any_emulation());
    }
}
