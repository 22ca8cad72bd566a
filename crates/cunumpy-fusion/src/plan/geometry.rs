//! The passes that depend on the device, run when a plan is loaded on one: how many blocks
//! per output each split reduction takes (from the device's SM count), the workspace
//! buffers of their partials, and the place of every buffer in the one workspace allocation
//! (first fit, buffers whose lifetimes do not overlap sharing bytes).

use crate::plan::types::{Body, BufferSpec, Plan, Strategy};

/// A plan's device-dependent layout for a device with `sm_count` SMs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Streaming multiprocessors of the device (sizes the grids).
    pub sm_count: u32,
    /// Per kernel: blocks per output of its split reduction (None: not a split reduction).
    pub split: Vec<Option<usize>>,
    /// Per kernel: the buffer (in `buffers`) of each of its reductions' partials (split only).
    pub partials: Vec<Vec<usize>>,
    /// The plan's buffers, then the partials of the split reductions, kernel by kernel.
    pub buffers: Vec<BufferSpec>,
    /// Byte offset of each buffer in the workspace (256-aligned).
    pub offsets: Vec<usize>,
    /// Bytes of the one workspace allocation the buffers live in.
    pub workspace_bytes: usize,
}

/// Blocks per output of a split reduction of `m` outputs of `k` elements: 16 blocks of 256
/// threads per SM in all (enough loads in flight to stream at the read rate), at least one
/// and at most one per 1024 reduced elements.
fn blocks_per_output(sm_count: u32, m: usize, k: usize) -> usize {
    let target = (sm_count as usize * 16).max(1);
    target.div_ceil(m.max(1)).clamp(1, k.div_ceil(1024).max(1))
}

impl Geometry {
    /// The layout of `plan` on a device with `sm_count` SMs.
    pub fn new(plan: &Plan, sm_count: u32) -> Geometry {
        let mut buffers = plan.buffers.clone();
        let mut split = Vec::with_capacity(plan.kernels.len());
        let mut partials = Vec::with_capacity(plan.kernels.len());
        for (ki, k) in plan.kernels.iter().enumerate() {
            let mut mine = Vec::new();
            let width = match &k.body {
                Body::Reduction(rb) if rb.strategy == Strategy::Split => {
                    let p = blocks_per_output(sm_count, rb.m, rb.k);
                    for (j, rs) in rb.reds.iter().enumerate() {
                        mine.push(buffers.len());
                        buffers.push(BufferSpec {
                            dtype: rs.acc,
                            elements: rb.m * p,
                            purpose: format!("partials of {} #{j} in kernel {ki}", rs.kind.name()),
                            live: (ki, ki),
                        });
                    }
                    Some(p)
                }
                _ => None,
            };
            split.push(width);
            partials.push(mine);
        }
        let (offsets, workspace_bytes) = place(&buffers);
        Geometry {
            sm_count,
            split,
            partials,
            buffers,
            offsets,
            workspace_bytes,
        }
    }

    /// Bytes of kernel `ki`'s partials (written, then read back by its combine launch).
    pub fn partial_bytes(&self, ki: usize) -> u64 {
        self.partials
            .get(ki)
            .map(|p| p.iter().map(|&b| self.buffers[b].bytes() as u64).sum())
            .unwrap_or(0)
    }
}

/// First-fit placement: each buffer (by first use, larger first) at the lowest 256-aligned
/// offset where it overlaps no placed buffer that is alive at the same time. Returns the
/// offsets and the bytes of the whole workspace.
fn place(buffers: &[BufferSpec]) -> (Vec<usize>, usize) {
    let rounded = |b: &BufferSpec| b.bytes().max(1).div_ceil(256) * 256;
    let mut offsets = vec![0usize; buffers.len()];
    let mut order: Vec<usize> = (0..buffers.len()).collect();
    order.sort_by_key(|&b| (buffers[b].live.0, std::cmp::Reverse(buffers[b].bytes())));
    let mut placed: Vec<usize> = Vec::new();
    let mut workspace_bytes = 0usize;
    for b in order {
        let size = rounded(&buffers[b]);
        let mut offset = 0usize;
        loop {
            let clash = placed.iter().find(|&&p| {
                let q = &buffers[p];
                let overlap_time = q.live.0 <= buffers[b].live.1 && buffers[b].live.0 <= q.live.1;
                overlap_time && offsets[p] < offset + size && offset < offsets[p] + rounded(q)
            });
            match clash {
                Some(&p) => offset = offsets[p] + rounded(&buffers[p]),
                None => break,
            }
        }
        offsets[b] = offset;
        workspace_bytes = workspace_bytes.max(offset + size);
        placed.push(b);
    }
    (offsets, workspace_bytes)
}
