//! The emulated Metal device: `MetalKernel` calls under `CUNUMPY_FAKE_METAL=1`, run by
//! `cunumpy-emu`'s Metal layer on the CPU. Builds share the emulated CUDA device's process-wide
//! library table and disk cache ([`crate::emulated::library`]); the call was checked before
//! (`cunumpy_core::metal::plan_call`), so what is left here is the build and the launch.

use std::sync::Arc;

use cunumpy_emu::{
    EmuError, EmuLibrary, MetalBuffer, MetalKernelSource, MetalLaunchOptions, MetalTranslation,
    METAL_OPTIONS,
};

use crate::emulated::{library, LibraryKey};

/// A Metal kernel built for the emulated device: its library and how to launch it.
#[derive(Clone)]
pub struct EmulatedMetalKernel {
    /// The library (shared with every equal build in this process).
    pub library: Arc<EmuLibrary>,
    /// The translation the library was built from.
    pub translation: MetalTranslation,
    /// Whether the library came from the disk cache.
    pub disk_hit: bool,
}

/// Translates and builds `kernel` (once per process for equal sources; the disk cache first).
/// Blocks for the compile: call it without holding any interpreter lock.
pub fn build(kernel: &MetalKernelSource) -> Result<EmulatedMetalKernel, EmuError> {
    let translation = kernel.translate();
    let key = LibraryKey::new(
        translation.source.clone(),
        translation.expression.clone(),
        METAL_OPTIONS.iter().map(|s| s.to_string()).collect(),
        Vec::new(),
    );
    let (lib, disk_hit) = library(key)?;
    Ok(EmulatedMetalKernel {
        library: lib,
        translation,
        disk_hit,
    })
}

impl EmulatedMetalKernel {
    /// Runs one launch to completion. Blocks: call it without holding any interpreter lock.
    ///
    /// # Safety
    /// As [`MetalTranslation::launch`]: every buffer is live host memory of its `nbytes`,
    /// untouched by others during the launch, and with `options.bounds` off the kernel stays
    /// inside them.
    pub unsafe fn run(
        &self,
        inputs: &[MetalBuffer],
        outputs: &[MetalBuffer],
        grid: [u32; 3],
        threadgroup: [u32; 3],
        options: &MetalLaunchOptions,
    ) -> Result<(), crate::RuntimeError> {
        // SAFETY: the caller upholds the contract above, which is the launch's.
        unsafe {
            self.translation
                .launch(&self.library, inputs, outputs, grid, threadgroup, options)
        }?;
        Ok(())
    }
}
