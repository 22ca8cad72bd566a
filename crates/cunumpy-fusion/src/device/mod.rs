//! A plan loaded on a device: [`Plan::for_device`] runs the device-dependent passes with the
//! device's real SM count (split widths, partials, workspace layout: `Geometry`) and generates
//! the CUDA source and every launch (grid, block, parameters) for it. `pack` turns one call's
//! pointers and scalars into the bytes of each launch's parameters.
//!
//! The same [`DevicePlan`] serves a GPU and the emulated device (which runs the very CUDA C on
//! the CPU): a caller builds one per device it launches on, from that device's SM count.

pub(crate) mod pack;

use crate::codegen::{cuda, dialect};
use crate::plan::explain::{explain, OnDevice};
use crate::plan::{Geometry, Launch, Plan};
use cunumpy_core::dtype::DType;

/// What a plan is loaded for: the device's properties that shape the generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceTarget {
    /// Streaming multiprocessors of the device (sizes the grids and the split reductions).
    pub sm_count: u32,
}

impl DeviceTarget {
    /// An NVIDIA H200 (132 SMs): the reference target of the golden files and of plans
    /// inspected without a device.
    pub const H200: DeviceTarget = DeviceTarget { sm_count: 132 };

    pub fn new(sm_count: u32) -> Self {
        DeviceTarget {
            sm_count: sm_count.max(1),
        }
    }
}

/// One kernel of a plan loaded on a device.
#[derive(Clone, Debug)]
pub struct DeviceKernel {
    /// One launch, or two for a split reduction (partials, then the final combine).
    pub launches: Vec<Launch>,
    /// Bytes read and written, the partials of a split reduction included.
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// A plan loaded on a device: its CUDA source, launches and workspace layout.
#[derive(Clone, Debug)]
pub struct DevicePlan {
    pub target: DeviceTarget,
    pub geometry: Geometry,
    /// The CUDA C of every kernel, after one shared preamble of helpers. Each kernel is a
    /// plain `extern "C" __global__` function named as in [`Launch::name`].
    pub source: String,
    /// Bytes of `source` before the complex preamble (if any) and the kernels: the helpers
    /// of [`crate::PREAMBLE`] that they call.
    pub preamble_len: usize,
    /// One per kernel of the plan, in order.
    pub kernels: Vec<DeviceKernel>,
    /// The declared dtype of each scalar parameter (to convert a call's values).
    pub(crate) scalars: Vec<DType>,
}

impl Plan {
    /// This plan loaded on a device described by `target`: CUDA source, launch geometry and
    /// workspace layout from the device's SM count.
    pub fn for_device(&self, target: DeviceTarget) -> DevicePlan {
        let geometry = Geometry::new(self, target.sm_count);
        // the kernels first: the preamble keeps only the helpers they (and the complex
        // preamble) call
        let mut body = String::new();
        if dialect::uses_complex(self) {
            body.push_str(dialect::COMPLEX_PREAMBLE);
        }
        let mut kernels = Vec::with_capacity(self.kernels.len());
        for (ki, k) in self.kernels.iter().enumerate() {
            let (text, launches) = cuda::generate(self, &geometry, ki);
            body.push('\n');
            body.push_str(&text);
            let partial = geometry.partial_bytes(ki);
            kernels.push(DeviceKernel {
                launches,
                bytes_read: k.bytes_read + partial,
                bytes_written: k.bytes_written + partial,
            });
        }
        let mut source = dialect::preamble_for(&body);
        let preamble_len = source.len();
        source.push_str(&body);
        DevicePlan {
            target,
            geometry,
            source,
            preamble_len,
            kernels,
            scalars: self.scalars.iter().map(|(d, _)| *d).collect(),
        }
    }
}

impl DevicePlan {
    /// Every launch of the plan, in order.
    pub fn launches(&self) -> impl Iterator<Item = &Launch> {
        self.kernels.iter().flat_map(|k| &k.launches)
    }

    /// Bytes of the one workspace allocation a call needs (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.geometry.workspace_bytes
    }

    /// The plan's text ([`Plan::explain`]) with this device's launches and workspace layout;
    /// `plan` is the plan this was loaded from.
    pub fn explain(&self, plan: &Plan) -> String {
        explain(
            plan,
            Some(&OnDevice {
                geometry: &self.geometry,
                launches: self.kernels.iter().map(|k| k.launches.as_slice()).collect(),
            }),
        )
    }
}
