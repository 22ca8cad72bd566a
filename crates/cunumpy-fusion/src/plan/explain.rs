//! A plan as text: its kernels, what each reads and writes, the bytes it moves and its
//! buffers; for a plan loaded on a device, also each kernel's launches, the split widths and
//! the workspace layout.

use crate::plan::geometry::Geometry;
use crate::plan::types::{KernelKind, Launch, Operand, Plan, Strategy};
use std::fmt::Write as _;

/// What a plan loaded on a device adds to its text: its layout and each kernel's launches.
pub(crate) struct OnDevice<'a> {
    pub geometry: &'a Geometry,
    pub launches: Vec<&'a [Launch]>,
}

impl Plan {
    /// A readable description: kernels, what they read and write, bytes moved and buffers
    /// (launches and workspace offsets are those of a device: see `DevicePlan::explain`).
    pub fn explain(&self) -> String {
        explain(self, None)
    }
}

pub(crate) fn explain(plan: &Plan, device: Option<&OnDevice<'_>>) -> String {
    let mut s = String::new();
    let geometry = device.map(|d| d.geometry);
    let buffers = geometry.map_or(&plan.buffers, |g| &g.buffers);
    let name_of = |o: &Operand| -> String {
        match o {
            Operand::Input(i) => {
                let t = &plan.inputs[*i];
                format!("in{i}: {}{:?}", t.dtype, t.shape)
            }
            Operand::Output(i) => {
                let t = &plan.outputs[*i];
                format!("out{i}: {}{:?}", t.dtype, t.shape)
            }
            Operand::Buffer(b) => {
                let t = &buffers[*b];
                format!("buf{b}: {}[{}]", t.dtype, t.elements)
            }
            Operand::Scalar(i) => format!("s{i}: {}", plan.scalars[*i].0),
        }
    };
    match device {
        Some(d) => {
            let _ = writeln!(
                s,
                "plan `{}`: {} kernel(s), {} launch(es), workspace {} bytes",
                plan.options.name,
                plan.kernels.len(),
                d.launches.iter().map(|l| l.len()).sum::<usize>(),
                d.geometry.workspace_bytes
            );
        }
        None => {
            let _ = writeln!(
                s,
                "plan `{}`: {} kernel(s)",
                plan.options.name,
                plan.kernels.len()
            );
        }
    }
    let (mut total_read, mut total_written) = (0u64, 0u64);
    for (i, k) in plan.kernels.iter().enumerate() {
        let what = match &k.kind {
            KernelKind::Elementwise { elements } => {
                format!("elementwise over {elements} element(s)")
            }
            KernelKind::Reduction {
                strategy,
                outputs,
                reduced,
            } => format!(
                "reduction: {outputs} output(s) x {reduced} reduced element(s), {}",
                match (strategy, geometry.and_then(|g| g.split[i])) {
                    (Strategy::Split, Some(blocks_per_output)) => format!(
                        "split into {blocks_per_output} block(s) per output + final combine"
                    ),
                    (Strategy::Split, None) =>
                        "split into blocks per output (by the device's SM count) + final combine"
                            .into(),
                    (Strategy::WarpPerRow, _) => "one warp per output".into(),
                    (Strategy::LanesPerRow(1), _) => "one thread per output (short rows)".into(),
                    (Strategy::LanesPerRow(lanes), _) =>
                        format!("{lanes} lanes per output ({} outputs per warp)", 32 / lanes),
                    (Strategy::ThreadPerOutput, _) => "one thread per output".into(),
                }
            ),
        };
        let _ = writeln!(s, "kernel {i} `{}`: {what}", k.name);
        let _ = writeln!(s, "  fuses: {}", k.fused_ops.join(", "));
        let _ = writeln!(
            s,
            "  reads: {}",
            k.reads.iter().map(name_of).collect::<Vec<_>>().join(", ")
        );
        let _ = writeln!(
            s,
            "  writes: {}",
            k.writes.iter().map(name_of).collect::<Vec<_>>().join(", ")
        );
        let partial = geometry.map_or(0, |g| g.partial_bytes(i));
        let (read, written) = (k.bytes_read + partial, k.bytes_written + partial);
        total_read += read;
        total_written += written;
        let _ = writeln!(s, "  bytes: {read} read, {written} written");
        for l in device
            .and_then(|d| d.launches.get(i))
            .copied()
            .unwrap_or(&[])
        {
            let _ = writeln!(
                s,
                "  launch {}<<<{}, {}>>>({})",
                l.name,
                l.grid,
                l.block,
                l.params
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    for (b, buf) in buffers.iter().enumerate() {
        let at = match geometry {
            Some(g) => format!(" at workspace offset {}", g.offsets[b]),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "buf{b}: {} x {}{at} (kernels {}..={}): {}",
            buf.elements, buf.dtype, buf.live.0, buf.live.1, buf.purpose
        );
    }
    let _ = writeln!(
        s,
        "total: {total_read} bytes read, {total_written} bytes written"
    );
    s
}
