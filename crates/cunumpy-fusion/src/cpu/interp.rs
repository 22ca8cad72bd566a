//! The block interpreter: each kernel's program is interpreted over blocks of `BLOCK`
//! elements (one op over a whole block at a time, with the op table's monomorphised slice
//! loops), so no temporary is ever larger than a block. Reductions are parallel and
//! deterministic: the work is cut into fixed chunks that do not depend on the thread count,
//! and the chunks' partial results are combined in a fixed pairwise tree. Large exact
//! programs run through their compiled loop instead (`host_run`), with the same results.

use crate::cpu::host_loops::LoopSlot;
use crate::cpu::host_run;
use crate::cpu::shared::{combine, internal, Env, Partial, Prepared, BLOCK, RED_CHUNK};
use crate::cpu::spares::Spares;
use crate::error::{FusionError, Result};
use crate::ir::graph::ReduceKind;
use crate::ir::ops::{CpuKernel, CxKernel, Op, K1, K2, K3};
use crate::plan::{LeafSrc, Program, RedBody, RegKind};
use crate::scalar::complex::Complex;
use crate::scalar::elem::{cast_into, with_elem, Column, Data, DataMut, Elem, Operand, Sv};
use cunumpy_core::dtype::{DType, DTypeKind};
use rayon::prelude::*;
use std::cell::RefCell;

/// Rows at least this long are evaluated in blocks that end at row ends (see
/// `run_elementwise`): shorter rows would make blocks too small to amortise the interpretation.
const ROW_BLOCK_MIN: usize = 512;
/// Elements per parallel task of an elementwise kernel.
const TASK: usize = 16 * BLOCK;
/// Kernels over at most this many points run on the calling thread (a rayon hand-off costs
/// more than the work below it).
const SERIAL_BELOW: usize = 2 * TASK;

/// The state of one register for the current block.
#[derive(Clone, Copy)]
enum RegState<'a> {
    Splat(Sv),
    Borrowed(Data<'a>),
    /// In the scratch column of the register.
    Col,
    /// Written straight into the block's destination (the last register of an elementwise
    /// program with one store); nothing reads it afterwards.
    Direct,
}

/// Per-thread scratch: one column per register.
struct Scratch {
    cols: Vec<Column>,
}

thread_local! {
    /// The columns of the last finished `Scratch` of this thread, reused by the next one so
    /// that a call does not allocate and zero a fresh block per register.
    static SPARE_COLUMNS: RefCell<Vec<Column>> = const { RefCell::new(Vec::new()) };
}

impl Scratch {
    fn new(n: usize) -> Self {
        let mut cols = SPARE_COLUMNS
            .try_with(|s| s.try_borrow_mut().map(|mut v| std::mem::take(&mut *v)))
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        cols.resize_with(n, Column::default);
        Scratch { cols }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let cols = std::mem::take(&mut self.cols);
        let _ = SPARE_COLUMNS.try_with(|s| {
            if let Ok(mut spare) = s.try_borrow_mut() {
                if spare.len() < cols.len() {
                    *spare = cols;
                }
            }
        });
    }
}

fn ensure_col<U: Elem>(c: &mut Column, len: usize) -> &mut [U] {
    if U::col_mut(c).is_none() {
        *c = U::new_col(Vec::with_capacity(BLOCK));
    }
    match U::col_mut(c) {
        Some(v) => {
            v.resize(len, U::default());
            &mut v[..]
        }
        None => &mut [],
    }
}

fn operand<'x, T: Elem>(st: &RegState<'x>, col: &'x Column) -> Option<Operand<'x, T>> {
    match st {
        RegState::Splat(v) => T::from_sv(*v).map(Operand::Splat),
        RegState::Borrowed(d) => T::slice(d).map(Operand::Slice),
        RegState::Col => T::slice(&col.as_data()).map(Operand::Slice),
        RegState::Direct => None,
    }
}

/// Reads `out.len()` points of a strided leaf from linear point `start` on: `base` is the
/// element at the origin, strides may be negative (a reversed slice) or 0 (broadcast).
fn gather<T: Elem>(
    src: &[T],
    dims: &[usize],
    strides: &[isize],
    base: usize,
    start: usize,
    out: &mut [T],
) -> Option<()> {
    let r = dims.len();
    let mut coords = vec![0usize; r];
    let mut rem = start;
    let mut off = base as isize;
    for j in (0..r).rev() {
        coords[j] = rem % dims[j].max(1);
        rem /= dims[j].max(1);
        off += coords[j] as isize * strides[j];
    }
    let last = r - 1;
    let (dl, sl) = (dims[last], strides[last]);
    let at = |o: isize| -> Option<T> { src.get(usize::try_from(o).ok()?).copied() };
    let mut i = 0;
    while i < out.len() {
        let run = (dl - coords[last]).min(out.len() - i);
        if sl == 0 {
            let v = at(off)?;
            out[i..i + run].fill(v);
        } else if sl == 1 {
            let o = usize::try_from(off).ok()?;
            out[i..i + run].copy_from_slice(src.get(o..o + run)?);
        } else {
            for (t, o) in out[i..i + run].iter_mut().enumerate() {
                *o = at(off + t as isize * sl)?;
            }
        }
        i += run;
        // advance coordinates by `run`
        coords[last] += run;
        off += run as isize * sl;
        let mut j = last;
        while coords[j] >= dims[j] && j > 0 {
            off -= coords[j] as isize * strides[j];
            coords[j] = 0;
            j -= 1;
            coords[j] += 1;
            off += strides[j];
        }
    }
    Some(())
}

/// The element offsets of `out.len()` points of a strided leaf from linear point `start`.
fn static_offsets(dims: &[usize], strides: &[isize], base: usize, start: usize, out: &mut [isize]) {
    let r = dims.len();
    let mut coords = vec![0usize; r];
    let mut rem = start;
    let mut off = base as isize;
    for j in (0..r).rev() {
        coords[j] = rem % dims[j].max(1);
        rem /= dims[j].max(1);
        off += coords[j] as isize * strides[j];
    }
    for o in out.iter_mut() {
        *o = off;
        let mut j = r;
        while j > 0 {
            j -= 1;
            coords[j] += 1;
            off += strides[j];
            if coords[j] < dims[j] || j == 0 {
                break;
            }
            off -= coords[j] as isize * strides[j];
            coords[j] = 0;
        }
    }
}

/// Loads a leaf with gathered coordinates (`a[idx]`): its static offsets plus, per gathered
/// axis, the checked index values times the axis's stride.
fn load_gathered<'a>(
    pr: &Prepared<'_>,
    reg: usize,
    data: Data<'a>,
    start: usize,
    len: usize,
    col: &mut Column,
    dyns: &[(&RegState<'_>, &Column, isize)],
) -> Result<RegState<'a>> {
    let mut offs = vec![0isize; len];
    if pr.dims.is_empty() {
        offs.fill(pr.offsets[reg] as isize);
    } else {
        static_offsets(
            &pr.dims,
            &pr.strides[reg],
            pr.offsets[reg],
            start,
            &mut offs,
        );
    }
    for &(st, c, stride) in dyns {
        match operand::<i64>(st, c).ok_or_else(|| internal("gathered index"))? {
            Operand::Splat(v) => offs.iter_mut().for_each(|o| *o += v as isize * stride),
            Operand::Slice(s) => {
                for (o, &v) in offs.iter_mut().zip(s) {
                    *o += v as isize * stride;
                }
            }
        }
    }
    with_elem!(data.dtype(), T => {
        let src = T::slice(&data).ok_or_else(|| internal("leaf dtype"))?;
        let out = ensure_col::<T>(col, len);
        for (d, &o) in out.iter_mut().zip(&offs) {
            *d = *usize::try_from(o)
                .ok()
                .and_then(|o| src.get(o))
                .ok_or_else(|| internal("gathered leaf out of bounds"))?;
        }
        Ok(RegState::Col)
    })
}

fn load_leaf<'a>(
    pr: &Prepared<'_>,
    reg: usize,
    data: Data<'a>,
    start: usize,
    len: usize,
    col: &mut Column,
) -> Result<RegState<'a>> {
    let st = &pr.strides[reg];
    let base = pr.offsets[reg];
    let bad = || internal("leaf out of bounds");
    if st.iter().all(|&s| s == 0) {
        if data.is_empty() {
            return Ok(RegState::Col);
        }
        if base >= data.len() {
            return Err(bad());
        }
        return Ok(RegState::Splat(data.get(base)));
    }
    if *st == pr.contiguous {
        if base + start + len > data.len() {
            return Err(bad());
        }
        return Ok(RegState::Borrowed(data.sub(base + start, len)));
    }
    let r = pr.dims.len();
    let last = r - 1;
    let inner = start % pr.dims[last];
    if inner + len <= pr.dims[last] && (st[last] == 0 || st[last] == 1) {
        let mut rem = start;
        let mut at = base as isize;
        for j in (0..r).rev() {
            at += (rem % pr.dims[j]) as isize * st[j];
            rem /= pr.dims[j];
        }
        let at = usize::try_from(at).map_err(|_| bad())?;
        let end = if st[last] == 0 { at + 1 } else { at + len };
        if end > data.len() {
            return Err(bad());
        }
        return Ok(if st[last] == 0 {
            RegState::Splat(data.get(at))
        } else {
            RegState::Borrowed(data.sub(at, len))
        });
    }
    with_elem!(data.dtype(), T => {
        let src = T::slice(&data).ok_or_else(|| internal("leaf dtype"))?;
        let out = ensure_col::<T>(col, len);
        gather(src, &pr.dims, st, base, start, out).ok_or_else(bad)?;
        Ok(RegState::Col)
    })
}

fn exec1<T: Elem, U: Elem>(
    f: K1<T, U>,
    a: &RegState<'_>,
    ca: &Column,
    out: &mut Column,
    len: usize,
    direct: Option<&mut DataMut<'_>>,
) -> Result<RegState<'static>> {
    let oa = operand::<T>(a, ca).ok_or_else(|| internal("operand dtype"))?;
    if let Operand::Splat(_) = oa {
        let mut t = [U::default()];
        f(oa, &mut t);
        return Ok(RegState::Splat(t[0].to_sv()));
    }
    Ok(match direct.and_then(|d| U::data_mut(d)) {
        Some(d) => {
            f(oa, d);
            RegState::Direct
        }
        None => {
            f(oa, ensure_col::<U>(out, len));
            RegState::Col
        }
    })
}

fn exec2<T: Elem, U: Elem>(
    f: K2<T, U>,
    a: (&RegState<'_>, &Column),
    b: (&RegState<'_>, &Column),
    out: &mut Column,
    len: usize,
    direct: Option<&mut DataMut<'_>>,
) -> Result<RegState<'static>> {
    let oa = operand::<T>(a.0, a.1).ok_or_else(|| internal("operand dtype"))?;
    let ob = operand::<T>(b.0, b.1).ok_or_else(|| internal("operand dtype"))?;
    if let (Operand::Splat(_), Operand::Splat(_)) = (oa, ob) {
        let mut t = [U::default()];
        f(oa, ob, &mut t);
        return Ok(RegState::Splat(t[0].to_sv()));
    }
    Ok(match direct.and_then(|d| U::data_mut(d)) {
        Some(d) => {
            f(oa, ob, d);
            RegState::Direct
        }
        None => {
            f(oa, ob, ensure_col::<U>(out, len));
            RegState::Col
        }
    })
}

fn exec3<C: Elem, T: Elem>(
    f: K3<C, T>,
    a: (&RegState<'_>, &Column),
    b: (&RegState<'_>, &Column),
    c: (&RegState<'_>, &Column),
    out: &mut Column,
    len: usize,
    direct: Option<&mut DataMut<'_>>,
) -> Result<RegState<'static>> {
    let oa = operand::<C>(a.0, a.1).ok_or_else(|| internal("operand dtype"))?;
    let ob = operand::<T>(b.0, b.1).ok_or_else(|| internal("operand dtype"))?;
    let oc = operand::<T>(c.0, c.1).ok_or_else(|| internal("operand dtype"))?;
    if let (Operand::Splat(_), Operand::Splat(_), Operand::Splat(_)) = (oa, ob, oc) {
        let mut t = [T::default()];
        f(oa, ob, oc, &mut t);
        return Ok(RegState::Splat(t[0].to_sv()));
    }
    Ok(match direct.and_then(|d| T::data_mut(d)) {
        Some(d) => {
            f(oa, ob, oc, d);
            RegState::Direct
        }
        None => {
            f(oa, ob, oc, ensure_col::<T>(out, len));
            RegState::Col
        }
    })
}

macro_rules! by_type {
    ($dt:expr, $set:expr, $f:ident => $call:expr, [$($field:ident : $v:ident),*]) => {
        match $dt {
            $(DType::$v => { let $f = $set.$field; $call })*
            _ => Err(internal("op dtype")),
        }
    };
}
macro_rules! by_all {
    ($dt:expr, $set:expr, $f:ident => $call:expr) => {
        by_type!($dt, $set, $f => $call, [b: Bool, i8: Int8, u8: UInt8, i16: Int16, u16: UInt16,
            i32: Int32, u32: UInt32, i64: Int64, u64: UInt64, f32: Float32, f64: Float64])
    };
}
macro_rules! by_bits {
    ($dt:expr, $set:expr, $f:ident => $call:expr) => {
        by_type!($dt, $set, $f => $call, [b: Bool, i8: Int8, u8: UInt8, i16: Int16, u16: UInt16,
            i32: Int32, u32: UInt32, i64: Int64, u64: UInt64])
    };
}
macro_rules! by_float {
    ($dt:expr, $set:expr, $f:ident => $call:expr) => {
        by_type!($dt, $set, $f => $call, [f32: Float32, f64: Float64])
    };
}

/// Runs the complex loop of an op (`dt`: the complex loop dtype).
fn exec_complex<'c>(
    k: CxKernel,
    dt: DType,
    arg: &dyn Fn(usize) -> (&'c RegState<'c>, &'c Column),
    out: &mut Column,
    len: usize,
    direct: Option<&mut DataMut<'_>>,
) -> Result<RegState<'static>> {
    let c128 = dt == DType::Complex128;
    macro_rules! pick {
        ($s:expr, $f:ident => $call:expr) => {
            if c128 {
                let $f = $s.c128;
                $call
            } else {
                let $f = $s.c64;
                $call
            }
        };
    }
    match k {
        CxKernel::Same1(s) => pick!(s, f => exec1(f, arg(0).0, arg(0).1, out, len, direct)),
        CxKernel::ToReal(s) => pick!(s, f => exec1(f, arg(0).0, arg(0).1, out, len, direct)),
        CxKernel::Pred1(s) => pick!(s, f => exec1(f, arg(0).0, arg(0).1, out, len, direct)),
        CxKernel::Same2(s) => pick!(s, f => exec2(f, arg(0), arg(1), out, len, direct)),
        CxKernel::Cmp2(s) => pick!(s, f => exec2(f, arg(0), arg(1), out, len, direct)),
        CxKernel::Where(s) => pick!(s, f => exec3(f, arg(0), arg(1), arg(2), out, len, direct)),
    }
}

/// Evaluates a program over `len` points starting at flat index `start` of its space.
fn eval_block<'a>(
    pr: &Prepared<'_>,
    env: &Env<'a>,
    start: usize,
    len: usize,
    scratch: &mut Scratch,
    states: &mut Vec<RegState<'a>>,
    mut direct: Option<&mut DataMut<'_>>,
) -> Result<()> {
    states.clear();
    let last = pr.prog.regs.len().saturating_sub(1);
    for (i, reg) in pr.prog.regs.iter().enumerate() {
        let mut out = std::mem::take(&mut scratch.cols[i]);
        // the last register may be computed straight into the destination
        let mut dst = if i == last { direct.take() } else { None };
        let cols = &scratch.cols;
        let st = match &reg.kind {
            RegKind::Leaf(l) => match l.src {
                LeafSrc::Scalar(s) => {
                    RegState::Splat(*env.scalars.get(s).ok_or_else(|| internal("scalar index"))?)
                }
                src if !l.dynamic.is_empty() => {
                    let d = env.data(src).ok_or_else(|| internal("leaf source"))?;
                    let dyns: Vec<(&RegState<'_>, &Column, isize)> = l
                        .dynamic
                        .iter()
                        .map(|&(r, st)| (&states[r], &cols[r], st))
                        .collect();
                    load_gathered(pr, i, d, start, len, &mut out, &dyns)?
                }
                src => {
                    let d = env.data(src).ok_or_else(|| internal("leaf source"))?;
                    load_leaf(pr, i, d, start, len, &mut out)?
                }
            },
            RegKind::Index { arg, len: n, axis } => {
                let from = pr.prog.regs[*arg].dtype;
                let unsigned = from.kind() == DTypeKind::Unsigned;
                let n = *n as i64;
                let norm = |v: i64| -> Result<i64> {
                    let w = if v < 0 && !unsigned { v + n } else { v };
                    if w < 0 || w >= n {
                        let shown = if unsigned {
                            (v as u64).to_string()
                        } else {
                            v.to_string()
                        };
                        return Err(FusionError::Index {
                            op: "take".into(),
                            reason: format!(
                                "index {shown} is out of bounds for axis {axis} with size {n}"
                            ),
                        });
                    }
                    Ok(w)
                };
                with_elem!(from, S => {
                    match operand::<S>(&states[*arg], &cols[*arg])
                        .ok_or_else(|| internal("index operand"))?
                    {
                        Operand::Splat(v) => RegState::Splat(norm(v.to_i64())?.to_sv()),
                        Operand::Slice(src) => {
                            let o = ensure_col::<i64>(&mut out, len);
                            for (d, v) in o.iter_mut().zip(src) {
                                *d = norm(v.to_i64())?;
                            }
                            RegState::Col
                        }
                    }
                })
            }
            RegKind::Cast { arg } => {
                let a = &states[*arg];
                let ca = &cols[*arg];
                let from = pr.prog.regs[*arg].dtype;
                with_elem!(from, S => {
                    let oa = operand::<S>(a, ca).ok_or_else(|| internal("cast operand"))?;
                    with_elem!(reg.dtype, D => {
                        if let Operand::Splat(_) = oa {
                            let mut t = [D::default()];
                            cast_into::<S, D>(oa, &mut t);
                            RegState::Splat(t[0].to_sv())
                        } else {
                            cast_into::<S, D>(oa, ensure_col::<D>(&mut out, len));
                            RegState::Col
                        }
                    })
                })
            }
            RegKind::Op { op, args } => {
                let arg = |k: usize| (&states[args[k]], &cols[args[k]]);
                let in_dt = pr.prog.regs[args[args.len() - 1]].dtype;
                if in_dt.kind() == DTypeKind::Complex {
                    let k = op.def().cpu_complex.ok_or_else(|| internal("complex op"))?;
                    exec_complex(k, in_dt, &arg, &mut out, len, dst.take())?
                } else {
                    match op.def().cpu {
                        CpuKernel::All1(s) => {
                            by_all!(in_dt, s, f => exec1(f, arg(0).0, arg(0).1, &mut out, len, dst.take()))?
                        }
                        CpuKernel::Bits1(s) => {
                            by_bits!(in_dt, s, f => exec1(f, arg(0).0, arg(0).1, &mut out, len, dst.take()))?
                        }
                        CpuKernel::Float1(s) => {
                            by_float!(in_dt, s, f => exec1(f, arg(0).0, arg(0).1, &mut out, len, dst.take()))?
                        }
                        CpuKernel::Pred1(s) => {
                            by_all!(in_dt, s, f => exec1(f, arg(0).0, arg(0).1, &mut out, len, dst.take()))?
                        }
                        CpuKernel::All2(s) => {
                            by_all!(in_dt, s, f => exec2(f, arg(0), arg(1), &mut out, len, dst.take()))?
                        }
                        CpuKernel::Cmp2(s) => {
                            by_all!(in_dt, s, f => exec2(f, arg(0), arg(1), &mut out, len, dst.take()))?
                        }
                        CpuKernel::Bits2(s) => {
                            by_bits!(in_dt, s, f => exec2(f, arg(0), arg(1), &mut out, len, dst.take()))?
                        }
                        CpuKernel::Float2(s) => {
                            by_float!(in_dt, s, f => exec2(f, arg(0), arg(1), &mut out, len, dst.take()))?
                        }
                        CpuKernel::Where(s) => {
                            by_all!(in_dt, s, f => exec3(f, arg(0), arg(1), arg(2), &mut out, len, dst.take()))?
                        }
                        CpuKernel::All3(s) => {
                            by_all!(in_dt, s, f => exec3(f, arg(0), arg(1), arg(2), &mut out, len, dst.take()))?
                        }
                    }
                }
            }
        };
        scratch.cols[i] = out;
        states.push(st);
    }
    Ok(())
}

/// Copies a register's block value into a destination slice.
fn store_reg(st: &RegState<'_>, col: &Column, dst: &mut DataMut<'_>) -> Result<()> {
    if let RegState::Direct = st {
        return Ok(());
    }
    with_elem!(dst.dtype(), T => {
        let o = T::data_mut(dst).ok_or_else(|| internal("store dtype"))?;
        match operand::<T>(st, col).ok_or_else(|| internal("store operand"))? {
            Operand::Slice(s) => o.copy_from_slice(&s[..o.len()]),
            Operand::Splat(v) => o.fill(v),
        }
        Ok(())
    })
}

/// Runs a program over a whole space (elementwise kernels and reduction epilogues), in
/// parallel, storing registers into the targets (each a full C-contiguous array of the space).
pub(crate) fn run_elementwise<'e>(
    pr: &Prepared<'_>,
    env: &Env<'e>,
    mut targets: Vec<(usize, DataMut<'_>)>,
    compiled: &LoopSlot,
) -> Result<()> {
    let n: usize = pr.dims.iter().product();
    if n == 0 || host_run::elementwise(compiled, pr, env, &mut targets, n)? {
        return Ok(());
    }
    let regs: Vec<usize> = targets.iter().map(|t| t.0).collect();
    // work per point, in units of a cheap op; heavy programs get smaller tasks, and go
    // parallel at smaller sizes, than cheap ones
    let work = program_work(pr.prog);
    let task = (TASK * 4 / work).clamp(BLOCK, TASK) / BLOCK * BLOCK;
    let mut chunked: Vec<std::vec::IntoIter<DataMut<'_>>> = targets
        .into_iter()
        .map(|(_, d)| d.into_chunks(task).into_iter())
        .collect();
    let n_tasks = n.div_ceil(task);
    let mut tasks: Vec<(usize, Vec<DataMut<'_>>)> = Vec::with_capacity(n_tasks);
    for t in 0..n_tasks {
        let mut outs = Vec::with_capacity(chunked.len());
        for c in chunked.iter_mut() {
            outs.push(c.next().ok_or_else(|| internal("output chunks"))?);
        }
        tasks.push((t, outs));
    }
    let nregs = pr.prog.regs.len();
    // the one store of the last register, when that register is an op: computed in place
    let last = nregs.saturating_sub(1);
    let direct = match regs.iter().filter(|&&r| r == last).count() {
        1 if matches!(
            pr.prog.regs.get(last).map(|r| &r.kind),
            Some(RegKind::Op { .. })
        ) =>
        {
            regs.iter().position(|&r| r == last)
        }
        _ => None,
    };
    // A leaf reading rows of a larger array (a 2-D stencil's `u[1:-1, 2:]`) is borrowed in
    // place when a block stays within one row: blocks then end at row ends.
    let row = pr.dims.last().copied().filter(|&dl| {
        dl >= ROW_BLOCK_MIN
            && pr.dims.len() > 1
            && pr.prog.regs.iter().enumerate().any(|(i, r)| match &r.kind {
                RegKind::Leaf(l) => {
                    l.dynamic.is_empty()
                        && pr.strides[i] != pr.contiguous
                        && pr.strides[i].last() == Some(&1)
                }
                _ => false,
            })
    });
    let run_task = |(scratch, states): &mut (Scratch, Vec<RegState<'e>>),
                    (t, mut outs): (usize, Vec<DataMut<'_>>)|
     -> Result<()> {
        let t0 = t * task;
        let t1 = (t0 + task).min(n);
        let mut s = t0;
        while s < t1 {
            let mut len = BLOCK.min(t1 - s);
            if let Some(dl) = row {
                len = len.min(dl - s % dl);
            }
            match direct {
                Some(j) => {
                    let mut d = sub_mut(&mut outs[j], s - t0, len);
                    eval_block(pr, env, s, len, scratch, states, Some(&mut d))?;
                }
                None => eval_block(pr, env, s, len, scratch, states, None)?,
            }
            for (o, &r) in outs.iter_mut().zip(&regs) {
                let mut dst = sub_mut(o, s - t0, len);
                store_reg(&states[r], &scratch.cols[r], &mut dst)?;
            }
            s += len;
        }
        Ok(())
    };
    if n_tasks == 1 || n.saturating_mul(work) <= SERIAL_BELOW * 4 {
        // small spaces run on the calling thread: no pool wake-up, no task hand-off
        let mut state = (Scratch::new(nregs), Vec::with_capacity(nregs));
        return tasks.into_iter().try_for_each(|t| run_task(&mut state, t));
    }
    tasks.into_par_iter().try_for_each_init(
        || (Scratch::new(nregs), Vec::with_capacity(nregs)),
        run_task,
    )
}

/// The cost of one point of a program, in units of a cheap op (a libm function counts 16,
/// one of the vectorised `exp`/`sin`/`cos` of `vmath` 4), at least 1.
fn program_work(prog: &Program) -> usize {
    prog.regs
        .iter()
        .map(|r| match &r.kind {
            RegKind::Op {
                op: Op::Exp | Op::Sin | Op::Cos,
                ..
            } => 4,
            RegKind::Op { op, .. } if op.calls_math_library() => 16,
            RegKind::Op { .. } | RegKind::Cast { .. } | RegKind::Index { .. } => 1,
            _ => 0,
        })
        .sum::<usize>()
        .max(1)
}

fn sub_mut<'b>(d: &'b mut DataMut<'_>, start: usize, len: usize) -> DataMut<'b> {
    macro_rules! arms {
        ($($v:ident),*) => {
            match d { $(DataMut::$v(s) => DataMut::$v(&mut s[start..start + len]),)* }
        };
    }
    arms!(
        Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float32, Float64,
        Complex64, Complex128
    )
}

fn identity<T: Elem>(kind: ReduceKind) -> T {
    match kind {
        ReduceKind::Sum | ReduceKind::Mean { .. } | ReduceKind::Any => T::from_i64(0),
        ReduceKind::Prod | ReduceKind::All => T::from_i64(1),
        ReduceKind::Min | ReduceKind::Max => {
            let min = kind == ReduceKind::Min;
            match T::DT.kind() {
                // the largest (smallest) value in NumPy's lexicographic order
                DTypeKind::Complex if min => T::from_c(f64::INFINITY, f64::INFINITY),
                DTypeKind::Complex => T::from_c(f64::NEG_INFINITY, f64::NEG_INFINITY),
                DTypeKind::Float => T::from_f64(if min {
                    f64::INFINITY
                } else {
                    f64::NEG_INFINITY
                }),
                DTypeKind::Unsigned => {
                    let (lo, hi) = T::DT.int_range().unwrap_or((0, 0));
                    T::from_u64(if min { hi as u64 } else { lo as u64 })
                }
                _ => {
                    let (lo, hi) = T::DT.int_range().unwrap_or((0, 0));
                    T::from_i64(if min { hi as i64 } else { lo as i64 })
                }
            }
        }
    }
}

#[inline(always)]
fn fold_lanes<T: Elem>(init: T, s: &[T], f: impl Fn(T, T) -> T) -> T {
    let mut lanes = [init; 8];
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = f(*l, v);
        }
    }
    let mut acc = f(
        f(f(lanes[0], lanes[1]), f(lanes[2], lanes[3])),
        f(f(lanes[4], lanes[5]), f(lanes[6], lanes[7])),
    );
    for &v in chunks.remainder() {
        acc = f(acc, v);
    }
    acc
}

/// Folds a slice into an accumulator with 8 independent lanes (vectorisable, and more
/// accurate than one running sum).
fn fold<T: Elem>(kind: ReduceKind, acc: T, s: &[T]) -> T {
    let id = identity::<T>(kind);
    let v = match kind {
        ReduceKind::Sum | ReduceKind::Mean { .. } | ReduceKind::Any => {
            fold_lanes(id, s, |a, b| a.add_(b))
        }
        ReduceKind::Prod | ReduceKind::All => fold_lanes(id, s, |a, b| a.mul_(b)),
        ReduceKind::Min => fold_lanes(id, s, |a, b| a.min_(b)),
        ReduceKind::Max => fold_lanes(id, s, |a, b| a.max_(b)),
    };
    combine(kind, acc, v)
}

/// Folds `n` copies of one value.
fn fold_splat<T: Elem>(kind: ReduceKind, mut acc: T, v: T, n: usize) -> T {
    for _ in 0..n {
        acc = combine(kind, acc, v);
    }
    acc
}

struct RedTask {
    m0: usize,
    m1: usize,
    k0: usize,
    k1: usize,
}

fn new_partial(rb: &RedBody, len: usize) -> Result<Partial> {
    rb.reds
        .iter()
        .map(|r| with_elem!(r.acc, T => Ok(T::new_col(vec![identity::<T>(r.kind); len]))))
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn accumulate_rows(
    kind: ReduceKind,
    acc: &mut Column,
    st: &RegState<'_>,
    col: &Column,
    q0: usize,
    len: usize,
    k: usize,
    m0: usize,
) -> Result<()> {
    with_elem!(acc.dtype(), T => {
        let a = T::col_mut(acc).ok_or_else(|| internal("acc dtype"))?;
        let op = operand::<T>(st, col).ok_or_else(|| internal("acc operand"))?;
        let mut pos = 0;
        while pos < len {
            let m = (q0 + pos) / k;
            let end = ((m + 1) * k - q0).min(len);
            let slot = &mut a[m - m0];
            *slot = match op {
                Operand::Slice(s) => fold(kind, *slot, &s[pos..end]),
                Operand::Splat(v) => fold_splat(kind, *slot, v, end - pos),
            };
            pos = end;
        }
        Ok(())
    })
}

fn accumulate_columns(
    kind: ReduceKind,
    acc: &mut Column,
    st: &RegState<'_>,
    col: &Column,
    offset: usize,
    len: usize,
) -> Result<()> {
    with_elem!(acc.dtype(), T => {
        let a = T::col_mut(acc).ok_or_else(|| internal("acc dtype"))?;
        let a = &mut a[offset..offset + len];
        match operand::<T>(st, col).ok_or_else(|| internal("acc operand"))? {
            Operand::Slice(s) => {
                for (x, &v) in a.iter_mut().zip(s) {
                    *x = combine(kind, *x, v);
                }
            }
            Operand::Splat(v) => {
                for x in a.iter_mut() {
                    *x = combine(kind, *x, v);
                }
            }
        }
        Ok(())
    })
}

fn combine_into(kind: ReduceKind, a: &mut Column, b: &Column) -> Result<()> {
    with_elem!(a.dtype(), T => {
        let bs = T::slice(&b.as_data()).ok_or_else(|| internal("partial dtype"))?;
        let av = T::col_mut(a).ok_or_else(|| internal("partial dtype"))?;
        for (x, &y) in av.iter_mut().zip(bs) {
            *x = combine(kind, *x, y);
        }
        Ok(())
    })
}

/// Combines partials pairwise in a fixed tree.
fn pairwise(rb: &RedBody, mut parts: Vec<Partial>) -> Result<Option<Partial>> {
    while parts.len() > 1 {
        let mut next = Vec::with_capacity(parts.len().div_ceil(2));
        let mut it = parts.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                for ((ca, cb), r) in a.iter_mut().zip(&b).zip(&rb.reds) {
                    combine_into(r.kind, ca, cb)?;
                }
            }
            next.push(a);
        }
        parts = next;
    }
    Ok(parts.pop())
}

/// Runs the main phase of a reduction kernel: the M results of every reduction, finalized to
/// the result dtypes.
pub(crate) fn run_reduction<'e>(
    rb: &RedBody,
    env: &Env<'e>,
    compiled: &LoopSlot,
    spares: &Spares,
) -> Result<Vec<Column>> {
    let (m, k) = (rb.m, rb.k);
    let nd = rb.space.dims.len();
    let kd: Vec<usize> = (0..nd).filter(|&j| !rb.space.reduced[j]).collect();
    let rd: Vec<usize> = (0..nd).filter(|&j| rb.space.reduced[j]).collect();
    let columns =
        nd > 0 && !rb.space.reduced[nd - 1] && rb.space.dims[nd - 1] >= 64 && m > 1 && k > 1;
    let perm: Vec<usize> = if columns {
        rd.iter().chain(&kd).copied().collect()
    } else {
        kd.iter().chain(&rd).copied().collect()
    };
    let pr = Prepared::new(&rb.prog, &rb.space.dims, Some(&perm));
    let mut tasks = Vec::new();
    if m > 0 && k > 0 {
        if columns {
            let mlen = m.min(BLOCK);
            let kc = (RED_CHUNK / mlen).max(1);
            for m0 in (0..m).step_by(mlen) {
                for k0 in (0..k).step_by(kc) {
                    tasks.push(RedTask {
                        m0,
                        m1: (m0 + mlen).min(m),
                        k0,
                        k1: (k0 + kc).min(k),
                    });
                }
            }
        } else if k >= RED_CHUNK {
            for m0 in 0..m {
                for k0 in (0..k).step_by(RED_CHUNK) {
                    tasks.push(RedTask {
                        m0,
                        m1: m0 + 1,
                        k0,
                        k1: (k0 + RED_CHUNK).min(k),
                    });
                }
            }
        } else {
            let rows = (RED_CHUNK / k).max(1);
            for m0 in (0..m).step_by(rows) {
                tasks.push(RedTask {
                    m0,
                    m1: (m0 + rows).min(m),
                    k0: 0,
                    k1: k,
                });
            }
        }
    }
    let nregs = rb.prog.regs.len();
    let run_task =
        |(scratch, states): &mut (Scratch, Vec<RegState<'e>>), t: &RedTask| -> Result<Partial> {
            let mut part = new_partial(rb, t.m1 - t.m0)?;
            if columns {
                let len = t.m1 - t.m0;
                for kk in t.k0..t.k1 {
                    let q0 = kk * m + t.m0;
                    eval_block(&pr, env, q0, len, scratch, states, None)?;
                    for (j, r) in rb.reds.iter().enumerate() {
                        accumulate_columns(
                            r.kind,
                            &mut part[j],
                            &states[r.reg],
                            &scratch.cols[r.reg],
                            0,
                            len,
                        )?;
                    }
                }
            } else {
                let (q_start, q_end) = if t.m1 - t.m0 == 1 {
                    (t.m0 * k + t.k0, t.m0 * k + t.k1)
                } else {
                    (t.m0 * k, t.m1 * k)
                };
                let mut q = q_start;
                while q < q_end {
                    let len = BLOCK.min(q_end - q);
                    eval_block(&pr, env, q, len, scratch, states, None)?;
                    for (j, r) in rb.reds.iter().enumerate() {
                        accumulate_rows(
                            r.kind,
                            &mut part[j],
                            &states[r.reg],
                            &scratch.cols[r.reg],
                            q,
                            len,
                            k,
                            t.m0,
                        )?;
                    }
                    q += len;
                }
            }
            Ok(part)
        };
    // short rows, each whole in one task: a compiled loop folds them as those tasks do
    if !columns && k < RED_CHUNK {
        let rows = (RED_CHUNK / k.max(1)).max(1);
        if let Some(res) = host_run::row_reduction(compiled, rb, &pr, env, rows, spares)? {
            return res
                .into_iter()
                .zip(&rb.reds)
                .map(|(c, r)| finalize(c, r.kind, r.out, k))
                .collect();
        }
    }
    // a compiled loop gives the combined partials of the same chunks, in the same tree
    if let Some(total) = host_run::reduction(compiled, rb, &pr, env, tasks.len())? {
        return total
            .into_iter()
            .zip(&rb.reds)
            .map(|(c, r)| finalize(c, r.kind, r.out, k))
            .collect();
    }
    let partials: Vec<Partial> = if m * k <= SERIAL_BELOW {
        let mut state = (Scratch::new(nregs), Vec::with_capacity(nregs));
        tasks
            .iter()
            .map(|t| run_task(&mut state, t))
            .collect::<Result<Vec<_>>>()?
    } else {
        tasks
            .par_iter()
            .map_init(
                || (Scratch::new(nregs), Vec::with_capacity(nregs)),
                run_task,
            )
            .collect::<Result<Vec<_>>>()?
    };
    // results (accumulator dtype), combining the partials of each m range pairwise
    let mut results: Vec<Column> = new_partial(rb, m)?;
    let mut i = 0;
    while i < tasks.len() {
        let mut j = i;
        while j < tasks.len() && tasks[j].m0 == tasks[i].m0 {
            j += 1;
        }
        let group: Vec<Partial> = partials[i..j].to_vec();
        if let Some(p) = pairwise(rb, group)? {
            for ((res, part), r) in results.iter_mut().zip(p).zip(&rb.reds) {
                with_elem!(r.acc, T => {
                    let dst = T::col_mut(res).ok_or_else(|| internal("result dtype"))?;
                    let src = T::slice(&part.as_data()).ok_or_else(|| internal("result dtype"))?;
                    dst[tasks[i].m0..tasks[i].m0 + src.len()].copy_from_slice(src);
                });
            }
        }
        i = j;
    }
    // finalize: mean division and the result dtype
    results
        .into_iter()
        .zip(&rb.reds)
        .map(|(c, r)| finalize(c, r.kind, r.out, k))
        .collect()
}

fn finalize(c: Column, kind: ReduceKind, out: DType, k: usize) -> Result<Column> {
    // nothing to divide or cast: the accumulators are the results (a copy of m values would
    // cost a tall matrix's row reduction a third of its time in fresh pages)
    if c.dtype() == out && !matches!(kind, ReduceKind::Mean { .. }) {
        return Ok(c);
    }
    with_elem!(c.dtype(), A => {
        let src = col_slice::<A>(&c)?;
        with_elem!(out, D => {
            let v: Vec<D> = match kind {
                ReduceKind::Mean { ddof } => {
                    let div = k as f64 - ddof as f64;
                    src.iter()
                        .map(|x| {
                            let (re, im) = x.to_c();
                            D::from_c(re / div, im / div)
                        })
                        .collect()
                }
                _ => src.iter().map(|&x| D::cast_from::<A>(x)).collect(),
            };
            Ok(D::new_col(v))
        })
    })
}

fn col_slice<A: Elem>(c: &Column) -> Result<&[A]> {
    A::slice(&c.as_data()).ok_or_else(|| internal("column dtype"))
}
