//! Pass 7 of the planner: what each kernel reads and writes, and the bytes it moves (the
//! partials of a split reduction, which depend on the device, are added by `Geometry`).

use crate::plan::types::{Body, LeafSrc, Operand, Plan, Program, RegKind};
use std::collections::BTreeSet;

/// Fills every kernel's reads, writes and bytes moved.
pub(crate) fn count_traffic(plan: &mut Plan) {
    for ki in 0..plan.kernels.len() {
        let (reads, writes) = operands_of(&plan.kernels[ki].body);
        let size_of = |o: &Operand| -> u64 {
            match o {
                Operand::Input(i) => plan.inputs[*i].nbytes() as u64,
                Operand::Output(i) => plan.outputs[*i].nbytes() as u64,
                Operand::Buffer(b) => plan.buffers[*b].bytes() as u64,
                Operand::Scalar(_) => 0,
            }
        };
        let bytes_read = reads.iter().map(size_of).sum::<u64>();
        let bytes_written = writes.iter().map(size_of).sum::<u64>();
        let k = &mut plan.kernels[ki];
        k.reads = reads;
        k.writes = writes;
        k.bytes_read = bytes_read;
        k.bytes_written = bytes_written;
    }
}

fn prog_reads(p: &Program, out: &mut BTreeSet<Operand>) {
    for r in &p.regs {
        if let RegKind::Leaf(l) = &r.kind {
            match l.src {
                LeafSrc::Input(i) => out.insert(Operand::Input(i)),
                LeafSrc::Output(i) => out.insert(Operand::Output(i)),
                LeafSrc::Buffer(b) => out.insert(Operand::Buffer(b)),
                LeafSrc::Scalar(i) => out.insert(Operand::Scalar(i)),
                LeafSrc::Reduced(_) => false,
            };
        }
    }
}

fn operands_of(b: &Body) -> (Vec<Operand>, Vec<Operand>) {
    let mut reads = BTreeSet::new();
    let mut writes = BTreeSet::new();
    match b {
        Body::Elementwise { prog, stores, .. } => {
            prog_reads(prog, &mut reads);
            writes.extend(stores.iter().map(|s| s.dst));
        }
        Body::Reduction(rb) => {
            prog_reads(&rb.prog, &mut reads);
            prog_reads(&rb.epi, &mut reads);
            writes.extend(rb.stores.iter().map(|s| s.dst));
        }
    }
    (reads.into_iter().collect(), writes.into_iter().collect())
}
