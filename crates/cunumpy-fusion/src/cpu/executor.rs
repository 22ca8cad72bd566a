//! Running a plan on host arrays: the argument checks, the workspace of intermediate buffers,
//! and each kernel in order through the interpreter (which hands large exact kernels to
//! their compiled loops). [`HostLoopCache`] keeps one plan's compiled loops between calls.

use crate::cpu::host_loops::LoopSlot;
use crate::cpu::interp::{run_elementwise, run_reduction};
use crate::cpu::shared::{internal, Env, Prepared};
use crate::cpu::spares::Spares;
use crate::error::{FusionError, Result};
use crate::plan::{Body, Operand as PlanOperand, Plan};
use crate::scalar::complex::Complex;
use crate::scalar::elem::{with_elem, Column, Data, DataMut, Elem, Sv};
use crate::scalar::{to_sv, ScalarValue};
use cunumpy_core::dtype::DType;
use std::sync::OnceLock;

/// A read-only host array: C-contiguous data and its shape.
#[derive(Clone, Copy, Debug)]
pub struct ArrayRef<'a> {
    pub data: Data<'a>,
    pub shape: &'a [usize],
}

impl<'a> ArrayRef<'a> {
    pub fn new(data: impl Into<Data<'a>>, shape: &'a [usize]) -> Self {
        ArrayRef {
            data: data.into(),
            shape,
        }
    }
}

/// A writable host array: C-contiguous data and its shape.
#[derive(Debug)]
pub struct ArrayMut<'a> {
    pub data: DataMut<'a>,
    pub shape: &'a [usize],
}

impl<'a> ArrayMut<'a> {
    pub fn new(data: impl Into<DataMut<'a>>, shape: &'a [usize]) -> Self {
        ArrayMut {
            data: data.into(),
            shape,
        }
    }
}

macro_rules! from_slices {
    ($($t:ty => $v:ident),*) => {
        $(
            impl<'a> From<&'a [$t]> for Data<'a> {
                fn from(s: &'a [$t]) -> Self { Data::$v(s) }
            }
            impl<'a> From<&'a Vec<$t>> for Data<'a> {
                fn from(s: &'a Vec<$t>) -> Self { Data::$v(s) }
            }
            impl<'a> From<&'a mut [$t]> for DataMut<'a> {
                fn from(s: &'a mut [$t]) -> Self { DataMut::$v(s) }
            }
            impl<'a> From<&'a mut Vec<$t>> for DataMut<'a> {
                fn from(s: &'a mut Vec<$t>) -> Self { DataMut::$v(s) }
            }
        )*
    };
}
from_slices!(bool => Bool, i8 => Int8, u8 => UInt8, i16 => Int16, u16 => UInt16, i32 => Int32,
    u32 => UInt32, i64 => Int64, u64 => UInt64, f32 => Float32, f64 => Float64,
    Complex<f32> => Complex64, Complex<f64> => Complex128);

/// The compiled CPU loops of one plan's kernels (main program and reduction epilogue of each),
/// looked up on their first large run and kept for the next calls, and the reduction results
/// of the last call, whose pages the next call writes again instead of faulting in new ones.
/// Keep one beside a plan that runs more than once ([`execute_cpu_cached`]);
/// [`execute_cpu`] uses a fresh one per call.
#[derive(Debug, Default)]
pub struct HostLoopCache {
    slots: OnceLock<Vec<[LoopSlot; 2]>>,
    spares: Spares,
}

impl HostLoopCache {
    pub fn new() -> Self {
        Self::default()
    }

    fn slots(&self, kernels: usize) -> &[[LoopSlot; 2]] {
        self.slots
            .get_or_init(|| (0..kernels).map(|_| Default::default()).collect())
    }
}

fn check_arrays(plan: &Plan, inputs: &[ArrayRef<'_>], outputs: &[ArrayMut<'_>]) -> Result<()> {
    let bad = |what: String, expected: String, got: String| {
        Err(FusionError::Arguments {
            what,
            expected,
            got,
        })
    };
    if inputs.len() != plan.inputs.len() {
        return bad(
            "execute_cpu: inputs".into(),
            format!("{}", plan.inputs.len()),
            format!("{}", inputs.len()),
        );
    }
    if outputs.len() != plan.outputs.len() {
        return bad(
            "execute_cpu: outputs".into(),
            format!("{}", plan.outputs.len()),
            format!("{}", outputs.len()),
        );
    }
    for (i, (a, t)) in inputs.iter().zip(&plan.inputs).enumerate() {
        if a.shape != t.shape.as_slice() || a.data.dtype() != t.dtype || a.data.len() != t.size() {
            return bad(
                format!("execute_cpu: input {i}"),
                format!("{}{:?}", t.dtype, t.shape),
                format!(
                    "{}{:?} with {} elements",
                    a.data.dtype(),
                    a.shape,
                    a.data.len()
                ),
            );
        }
    }
    for (i, (a, t)) in outputs.iter().zip(&plan.outputs).enumerate() {
        if a.shape != t.shape.as_slice() || a.data.dtype() != t.dtype || a.data.len() != t.size() {
            return bad(
                format!("execute_cpu: output {i}"),
                format!("{}{:?}", t.dtype, t.shape),
                format!(
                    "{}{:?} with {} elements",
                    a.data.dtype(),
                    a.shape,
                    a.data.len()
                ),
            );
        }
    }
    Ok(())
}

/// Runs a plan on host arrays: `inputs` in argument order, `scalars` (converted to their
/// declared dtypes), `outputs` preallocated with the plan's output shapes and dtypes.
pub fn execute_cpu(
    plan: &Plan,
    inputs: &[ArrayRef<'_>],
    scalars: &[ScalarValue],
    outputs: &mut [ArrayMut<'_>],
) -> Result<()> {
    execute_cpu_cached(plan, &HostLoopCache::new(), inputs, scalars, outputs)
}

/// [`execute_cpu`] with the plan's compiled loops kept in `loops` (one cache per plan: a cache
/// first used with another plan holds the wrong loops' slots).
pub fn execute_cpu_cached(
    plan: &Plan,
    loops: &HostLoopCache,
    inputs: &[ArrayRef<'_>],
    scalars: &[ScalarValue],
    outputs: &mut [ArrayMut<'_>],
) -> Result<()> {
    check_arrays(plan, inputs, outputs)?;
    if scalars.len() != plan.scalars.len() {
        return Err(FusionError::Arguments {
            what: "execute_cpu: scalars".into(),
            expected: format!("{}", plan.scalars.len()),
            got: format!("{}", scalars.len()),
        });
    }
    let svs: Vec<Sv> = scalars
        .iter()
        .zip(&plan.scalars)
        .enumerate()
        .map(|(i, (v, (d, _)))| {
            to_sv(*v, *d).ok_or_else(|| FusionError::Arguments {
                what: format!("execute_cpu: scalar {i}"),
                expected: d.to_string(),
                got: format!("{v:?}"),
            })
        })
        .collect::<Result<_>>()?;
    let mut workspace: Vec<Option<Column>> = vec![None; plan.buffers.len()];
    let slots = loops.slots(plan.kernels.len());
    if slots.len() != plan.kernels.len() {
        return Err(internal("a loop cache of another plan"));
    }
    for (kernel, slots) in plan.kernels.iter().zip(slots) {
        // buffers this kernel writes, taken out of the workspace while it runs
        let stores = match &kernel.body {
            Body::Elementwise { stores, .. } => stores,
            Body::Reduction(rb) => &rb.stores,
        };
        let mut written: Vec<(usize, Column)> = Vec::new();
        for s in stores {
            if let PlanOperand::Buffer(b) = s.dst {
                let spec = &plan.buffers[b];
                let col =
                    with_elem!(spec.dtype, T => T::new_col(vec![T::default(); spec.elements]));
                written.push((b, col));
            }
        }
        let writes_output = |i: usize| {
            stores
                .iter()
                .any(|s| matches!(s.dst, PlanOperand::Output(o) if o == i))
        };
        let mut out_ro: Vec<Option<Data<'_>>> = Vec::with_capacity(outputs.len());
        let mut out_rw: Vec<(usize, DataMut<'_>)> = Vec::new();
        for (i, o) in outputs.iter_mut().enumerate() {
            if writes_output(i) {
                out_ro.push(None);
                out_rw.push((i, o.data.reborrow()));
            } else {
                out_ro.push(Some(o.data.as_data()));
            }
        }
        let env = Env {
            inputs: inputs.iter().map(|a| a.data).collect(),
            outputs: out_ro,
            buffers: workspace
                .iter()
                .map(|c| c.as_ref().map(|c| c.as_data()))
                .collect(),
            reduced: Vec::new(),
            scalars: &svs,
        };
        match &kernel.body {
            Body::Elementwise {
                space,
                prog,
                stores,
            } => {
                let pr = Prepared::new(prog, &space.dims, None);
                let targets = take_targets(stores, &mut written, out_rw)?;
                run_elementwise(&pr, &env, targets, &slots[0])?;
            }
            Body::Reduction(rb) => {
                let results = run_reduction(rb, &env, &slots[0], &loops.spares)?;
                let env = Env {
                    reduced: results.iter().map(|c| c.as_data()).collect(),
                    ..env
                };
                let pr = Prepared::new(&rb.epi, &rb.epi_space.dims, None);
                let targets = take_targets(&rb.stores, &mut written, out_rw)?;
                run_elementwise(&pr, &env, targets, &slots[1])?;
                drop(env);
                loops.spares.keep(results);
            }
        }
        for (b, col) in written {
            workspace[b] = Some(col);
        }
    }
    Ok(())
}

fn column_mut(c: &mut Column) -> DataMut<'_> {
    macro_rules! arms {
        ($($v:ident),*) => {
            match c { $(Column::$v(s) => DataMut::$v(&mut s[..]),)* }
        };
    }
    arms!(
        Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float32, Float64,
        Complex64, Complex128
    )
}

/// The destinations of a kernel's stores, in store order.
fn take_targets<'w>(
    stores: &[crate::plan::Store],
    written: &'w mut [(usize, Column)],
    mut rw: Vec<(usize, DataMut<'w>)>,
) -> Result<Vec<(usize, DataMut<'w>)>> {
    let mut t = Vec::new();
    let mut wi = written.iter_mut();
    for s in stores {
        match s.dst {
            PlanOperand::Output(i) => {
                let pos = rw
                    .iter()
                    .position(|(o, _)| *o == i)
                    .ok_or_else(|| internal("output written twice"))?;
                let (_, d) = rw.swap_remove(pos);
                t.push((s.reg, d));
            }
            PlanOperand::Buffer(_) => {
                let (_, col) = wi.next().ok_or_else(|| internal("buffer"))?;
                t.push((s.reg, column_mut(col)));
            }
            _ => return Err(internal("store destination")),
        }
    }
    Ok(t)
}
