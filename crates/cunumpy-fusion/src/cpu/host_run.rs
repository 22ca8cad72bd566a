//! Running compiled CPU loops (see `hostgen`, `host_loops`) over host data: the pointer table
//! of a program's leaves, checked against the data behind it, and the parallel split (large
//! contiguous ranges for elementwise loops; groups of four fixed chunks for reductions, whose
//! partials the executor combines exactly as it combines the interpreter's).

use crate::codegen::host::{
    elementwise_source, leaf_kinds, reduction_group, reduction_source, row_layout,
    row_reduction_source, rows_source, LeafKind,
};
use crate::cpu::host_loops::{count_run, wanted, LoopFn, LoopKind, LoopSlot};
use crate::cpu::shared::{combine, Env, Partial, Prepared, BLOCK, RED_CHUNK};
use crate::cpu::spares::Spares;
use crate::error::Result;
use crate::plan::{LeafSrc, RedBody, RegKind};
use crate::scalar::complex::Complex;
use crate::scalar::elem::{with_elem, Column, DataMut, Elem, Sv};
use cunumpy_core::dtype::DType;
use rayon::prelude::*;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// Results at least this large are written with non-temporal stores (they do not fit in the
/// caches, so a plain store would first read every target line for nothing).
const STREAM_BYTES: usize = 8 << 20;

/// Reductions of a bare array use a compiled loop only from this size on (out of the caches).
const BARE_REDUCTION_BYTES: usize = 32 << 20;
/// Runs over at most this many points stay on the calling thread (a rayon hand-off costs
/// more than the work below it), as in the interpreter.
const SERIAL_POINTS: usize = 1 << 17;

/// A scalar value laid out as its C type, for a uniform leaf to point at.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
struct ScalarSlot([u8; 16]);

fn scalar_slot(v: Sv) -> ScalarSlot {
    let mut s = ScalarSlot::default();
    let bytes = v.c_bytes();
    s.0[..bytes.len()].copy_from_slice(&bytes);
    s
}

/// The pointer table a compiled loop reads its leaves through (`leaves[r]` for leaf register
/// `r`), with the scalar values it points into. None when some data is not what the generated
/// code assumes (dtype, or fewer elements than `points` for a streamed leaf).
struct Leaves {
    ptrs: Vec<*const c_void>,
    _scalars: Box<[ScalarSlot]>,
}

impl Leaves {
    fn table(&self) -> *const *const c_void {
        self.ptrs.as_ptr()
    }
}

// SAFETY: the table only holds addresses of data the executor borrows for the whole run (input,
// output and workspace arrays, and the boxed scalar slots it owns); the compiled loops only read
// through them, so sharing the table between the threads of a run is as safe as sharing `&[T]`.
unsafe impl Send for Leaves {}
// SAFETY: as for Send: read-only addresses of data that outlives the run.
unsafe impl Sync for Leaves {}

/// The element range `[lo, hi]` relative to a leaf's pointer that a loop may read: the
/// static part over the space (`points` contiguous, or `rows` of `cols` points a row stride
/// apart) plus every gathered term over its index range; None when it does not fit an isize.
fn reach(
    pr: &Prepared<'_>,
    reg: usize,
    kind: LeafKind,
    points: usize,
    rows: Option<(&[i64], usize, usize)>,
) -> Option<(isize, isize)> {
    let span = |n: usize, step: isize| -> Option<(isize, isize)> {
        let far = isize::try_from(n.checked_sub(1)?).ok()?.checked_mul(step)?;
        Some((far.min(0), far.max(0)))
    };
    let (mut lo, mut hi) = match kind {
        LeafKind::Uniform
        | LeafKind::Gather {
            static_stream: false,
        } => (0, 0),
        LeafKind::Stream
        | LeafKind::Gather {
            static_stream: true,
        } => span(points, 1)?,
        LeafKind::Rows => {
            let (rs, n_rows, cols) = rows?;
            let (a, b) = span(n_rows, isize::try_from(*rs.get(reg)?).ok()?)?;
            (a, b.checked_add(span(cols, 1)?.1)?)
        }
    };
    if let RegKind::Leaf(l) = &pr.prog.regs.get(reg)?.kind {
        for &(r, st) in &l.dynamic {
            let RegKind::Index { len, .. } = pr.prog.regs.get(r)?.kind else {
                return None;
            };
            let (a, b) = span(len, st)?;
            lo = lo.checked_add(a)?;
            hi = hi.checked_add(b)?;
        }
    }
    Some((lo, hi))
}

fn leaves(
    pr: &Prepared<'_>,
    kinds: &[Option<LeafKind>],
    env: &Env<'_>,
    points: usize,
    rows: Option<(&[i64], usize, usize)>,
) -> Option<Leaves> {
    let regs = &pr.prog.regs;
    let mut scalars: Vec<ScalarSlot> = Vec::new();
    let mut slot_of = vec![usize::MAX; regs.len()];
    for (i, r) in regs.iter().enumerate() {
        if let RegKind::Leaf(l) = &r.kind {
            if let LeafSrc::Scalar(s) = l.src {
                let v = *env.scalars.get(s)?;
                if v.dtype() != r.dtype {
                    return None;
                }
                slot_of[i] = scalars.len();
                scalars.push(scalar_slot(v));
            }
        }
    }
    let scalars = scalars.into_boxed_slice();
    let mut ptrs = vec![std::ptr::null::<c_void>(); regs.len()];
    for (i, r) in regs.iter().enumerate() {
        let RegKind::Leaf(l) = &r.kind else { continue };
        let kind = kinds.get(i).copied().flatten()?;
        ptrs[i] = match l.src {
            LeafSrc::Scalar(_) => scalars.get(slot_of[i])?.0.as_ptr().cast(),
            src => {
                let d = env.data(src)?;
                // a slice not starting at 0 (a stencil's shifted read) starts `offset` in;
                // every element the loop may read lies within the data
                let offset = isize::try_from(pr.offsets.get(i).copied().unwrap_or(0)).ok()?;
                let (lo, hi) = reach(pr, i, kind, points, rows)?;
                let len = isize::try_from(d.len()).ok()?;
                if d.dtype() != r.dtype
                    || offset.checked_add(lo)? < 0
                    || offset.checked_add(hi)? >= len
                {
                    return None;
                }
                d.as_ptr()
                    .cast::<u8>()
                    .wrapping_add(offset.unsigned_abs() * d.dtype().itemsize())
                    .cast()
            }
        };
    }
    Some(Leaves {
        ptrs,
        _scalars: scalars,
    })
}

/// Destination addresses of one run (each target is borrowed mutably by the caller for the
/// run; tasks write disjoint ranges of it).
struct Dsts(Vec<*mut c_void>);

impl Dsts {
    fn table(&self) -> *const *mut c_void {
        self.0.as_ptr()
    }
}

// SAFETY: the addresses are of targets the caller borrows mutably for the whole run, and every
// task writes only its own range of points, so no two threads write the same element.
unsafe impl Send for Dsts {}
// SAFETY: as for Send: disjoint writes per task, data outliving the run.
unsafe impl Sync for Dsts {}

/// Points from `addr` (elements of `item` bytes) to the next 64-byte boundary; None when no
/// whole number of elements gets there.
fn line_skew(addr: usize, item: usize) -> Option<usize> {
    let bytes = (64 - addr % 64) % 64;
    (item > 0 && bytes % item == 0).then(|| bytes / item)
}

/// Runs an elementwise program through its compiled loop; false (nothing written) when there
/// is none ready for it.
pub(crate) fn elementwise(
    slot: &LoopSlot,
    pr: &Prepared<'_>,
    env: &Env<'_>,
    targets: &mut [(usize, DataMut<'_>)],
    points: usize,
) -> Result<bool> {
    if !wanted(points) {
        return Ok(false);
    }
    let Some(kinds) = leaf_kinds(pr.prog, &pr.strides, &pr.contiguous) else {
        return by_rows(slot, pr, env, targets, points);
    };
    let stores: Vec<usize> = targets.iter().map(|t| t.0).collect();
    let f = slot.function(points, || {
        elementwise_source(pr.prog, &kinds, &stores).map(|s| (s, LoopKind::Elementwise))
    });
    let Some(LoopFn::Elementwise(f)) = f else {
        return Ok(false);
    };
    let Some(table) = leaves(pr, &kinds, env, points, None) else {
        return Ok(false);
    };
    let mut out_bytes = 0;
    for (r, d) in targets.iter() {
        let dt = pr.prog.regs.get(*r).map(|g| g.dtype);
        if dt != Some(d.dtype()) || d.len() != points {
            return Ok(false);
        }
        out_bytes += points * d.dtype().itemsize();
    }
    let dsts = Dsts(targets.iter_mut().map(|(_, d)| d.as_mut_ptr()).collect());
    let item: Vec<usize> = targets.iter().map(|(_, d)| d.dtype().itemsize()).collect();
    // Streaming writes whole cache lines per tile: the points before the first 64-byte
    // boundary of the first target go first, plainly; the tasks after it start at multiples of
    // 64 points, which is a line boundary of every target that shares that alignment.
    let skew = line_skew(dsts.0[0] as usize, item[0]);
    let aligned = skew.is_some_and(|k| {
        dsts.0
            .iter()
            .zip(&item)
            .all(|(p, &sz)| (*p as usize + k * sz) % 64 == 0)
    });
    let streaming = out_bytes >= STREAM_BYTES && aligned;
    let head = if streaming {
        skew.unwrap_or(0).min(points)
    } else {
        0
    };
    // a few large contiguous ranges per thread: long streams, balanced by rayon
    let rest = points - head;
    let parts = rayon::current_num_threads().max(1) * 4;
    let task = rest.div_ceil(parts).next_multiple_of(64).max(4096);
    let n_tasks = rest.div_ceil(task);
    let bad = AtomicBool::new(false);
    let run_task = |t: usize| {
        // task 0: the head (maybe empty); then the line-aligned tasks
        let (start, len, stream) = match t {
            0 => (0, head, false),
            _ => {
                let s = head + (t - 1) * task;
                (s, task.min(points - s), streaming)
            }
        };
        if len == 0 {
            return;
        }
        // SAFETY: `f` is the loop generated for this program (same registers, dtypes and leaf
        // kinds); every leaf pointer addresses data of the register's dtype with at least
        // `points` elements (streamed) or one (uniform), checked in `leaves`; every destination
        // holds `points` elements of its register's dtype, is borrowed mutably for this run,
        // and overlaps no input (the callers check); this task writes only [start, start+len).
        let flagged = unsafe {
            f(
                start as i64,
                len as i64,
                table.table(),
                dsts.table(),
                c_int::from(stream),
            )
        };
        if flagged != 0 {
            bad.store(true, Ordering::Relaxed);
        }
    };
    if points <= SERIAL_POINTS {
        (0..n_tasks + 1).for_each(run_task);
    } else {
        (0..n_tasks + 1).into_par_iter().for_each(run_task);
    }
    // an index out of range: the interpreter reruns the kernel and raises NumPy's IndexError
    // for the index it meets first
    if bad.load(Ordering::Relaxed) {
        return Ok(false);
    }
    count_run();
    Ok(true)
}

/// Runs an elementwise program whose leaves read rows of larger arrays (`row_layout`)
/// through its compiled row loop, rows split over the threads; false (nothing written) when
/// there is none ready for it.
fn by_rows(
    slot: &LoopSlot,
    pr: &Prepared<'_>,
    env: &Env<'_>,
    targets: &mut [(usize, DataMut<'_>)],
    points: usize,
) -> Result<bool> {
    let Some((kinds, rs, n_rows, cols)) = row_layout(pr.prog, &pr.dims, &pr.strides) else {
        return Ok(false);
    };
    let stores: Vec<usize> = targets.iter().map(|t| t.0).collect();
    let f = slot.function(points, || {
        rows_source(pr.prog, &kinds, &stores).map(|s| (s, LoopKind::Rows))
    });
    let Some(LoopFn::Rows(f)) = f else {
        return Ok(false);
    };
    let Some(table) = leaves(pr, &kinds, env, points, Some((&rs, n_rows, cols))) else {
        return Ok(false);
    };
    let mut out_bytes = 0;
    for (r, d) in targets.iter() {
        let dt = pr.prog.regs.get(*r).map(|g| g.dtype);
        if dt != Some(d.dtype()) || d.len() != points || n_rows * cols != points {
            return Ok(false);
        }
        out_bytes += points * d.dtype().itemsize();
    }
    let dsts = Dsts(targets.iter_mut().map(|(_, d)| d.as_mut_ptr()).collect());
    let streaming = c_int::from(out_bytes >= STREAM_BYTES);
    // a few row ranges per thread, each at least about 4096 points
    let parts = rayon::current_num_threads().max(1) * 4;
    let per = n_rows.div_ceil(parts).max(4096usize.div_ceil(cols)).max(1);
    let n_tasks = n_rows.div_ceil(per);
    let bad = AtomicBool::new(false);
    let run_task = |t: usize| {
        let row0 = t * per;
        let nrows = per.min(n_rows - row0);
        // SAFETY: `f` is the row loop generated for this program (same registers, dtypes,
        // leaf kinds); every element it reads, `rs[r]` apart per row and `cols` per row from
        // each leaf pointer, lies within that leaf's data (checked in `leaves`); every
        // destination holds `n_rows * cols` elements of its register's dtype, is borrowed
        // mutably for this run and overlaps no input; this task writes only its rows.
        let flagged = unsafe {
            f(
                row0 as i64,
                nrows as i64,
                cols as i64,
                table.table(),
                rs.as_ptr(),
                dsts.table(),
                streaming,
            )
        };
        if flagged != 0 {
            bad.store(true, Ordering::Relaxed);
        }
    };
    if points <= SERIAL_POINTS {
        (0..n_tasks).for_each(run_task);
    } else {
        (0..n_tasks).into_par_iter().for_each(run_task);
    }
    if bad.load(Ordering::Relaxed) {
        return Ok(false);
    }
    count_run();
    Ok(true)
}

/// The result of a full reduction (one result, in the accumulator's dtype) through its
/// compiled loop: the partial of each fixed chunk, exactly as the interpreter's `tasks` tasks
/// produce them, combined in the interpreter's pairwise tree; None when there is no compiled
/// loop ready for it.
pub(crate) fn reduction(
    slot: &LoopSlot,
    rb: &RedBody,
    pr: &Prepared<'_>,
    env: &Env<'_>,
    tasks: usize,
) -> Result<Option<Partial>> {
    let k = rb.k;
    if !wanted(k)
        || rb.m != 1
        || rb.reds.len() != 1
        || k == 0
        || pr.dims.iter().product::<usize>() != k
    {
        return Ok(None);
    }
    let red = &rb.reds[0];
    // A reduction of an array as it is (sum(a), mean(a)) folds the array in place in the
    // interpreter, which is faster than the compiled loop while the data sits in the caches
    // (2 cores, sum of 300000 float64: 62 us interpreted, 120 us compiled); from main memory
    // the compiled loop's interleaved streams win (10^7: 17 vs 27 GB/s).
    let bare = matches!(
        pr.prog.regs.get(red.reg).map(|r| &r.kind),
        Some(RegKind::Leaf(_))
    );
    if bare && k * red.acc.itemsize() < BARE_REDUCTION_BYTES {
        return Ok(None);
    }
    let Some(kinds) = leaf_kinds(pr.prog, &pr.strides, &pr.contiguous) else {
        return Ok(None);
    };
    let f = slot.function(k, || {
        reduction_source(pr.prog, &kinds, red, BLOCK).map(|s| (s, LoopKind::Reduce))
    });
    let Some(LoopFn::Reduce(f)) = f else {
        return Ok(None);
    };
    let Some(table) = leaves(pr, &kinds, env, k, None) else {
        return Ok(None);
    };
    let chunk = if k >= RED_CHUNK { RED_CHUNK } else { k };
    let n_chunks = k.div_ceil(chunk);
    if n_chunks != tasks {
        return Ok(None);
    }
    with_elem!(red.acc, T => {
        let mut parts = vec![T::default(); n_chunks];
        let group = reduction_group(&kinds);
        let run_group = |(g, out): (usize, &mut [T])| {
            // SAFETY: `f` is the loop generated for this program and reduction; the leaf
            // pointers address data of each register's dtype with at least `k` elements
            // (streamed) or one (uniform), checked in `leaves`; `out` holds `out.len()`
            // values of the accumulator's dtype, written only by this task.
            unsafe {
                f(
                    (g * group * chunk) as i64,
                    chunk as i64,
                    k as i64,
                    out.len() as i64,
                    table.table(),
                    out.as_mut_ptr().cast(),
                )
            };
        };
        if k <= SERIAL_POINTS {
            parts.chunks_mut(group).enumerate().for_each(run_group);
        } else {
            parts.par_chunks_mut(group).enumerate().for_each(run_group);
        }
        count_run();
        // the chunks' partials combined pairwise, level by level, as `cpu::pairwise` does
        let mut level = parts;
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|p| match p {
                    [a, b] => combine(red.kind, *a, *b),
                    [a] => *a,
                    _ => T::default(),
                })
                .collect();
        }
        Ok(level.first().map(|&v| vec![T::new_col(vec![v])]))
    })
}

/// The results of every reduction of a kernel over short rows (`m` rows of `k < RED_CHUNK`
/// points, the interpreter's tasks of `rows` rows each) through its compiled row loop, in the
/// accumulators' dtypes, exactly as the interpreter's tasks fold them; None when there is no
/// compiled loop ready for it.
pub(crate) fn row_reduction(
    slot: &LoopSlot,
    rb: &RedBody,
    pr: &Prepared<'_>,
    env: &Env<'_>,
    rows: usize,
    spares: &Spares,
) -> Result<Option<Vec<Column>>> {
    let (m, k) = (rb.m, rb.k);
    let points = m.saturating_mul(k);
    if !wanted(points)
        || m < 2
        || k == 0
        || rows == 0
        || pr.dims.iter().product::<usize>() != points
    {
        return Ok(None);
    }
    let Some(kinds) = leaf_kinds(pr.prog, &pr.strides, &pr.contiguous) else {
        return Ok(None);
    };
    let f = slot.function(points, || {
        row_reduction_source(pr.prog, &kinds, &rb.reds, BLOCK).map(|s| (s, LoopKind::RowReduce))
    });
    let Some(LoopFn::RowReduce(f)) = f else {
        return Ok(None);
    };
    let Some(table) = leaves(pr, &kinds, env, points, None) else {
        return Ok(None);
    };
    // the tasks below cover rows [0, m) and write each row's first segment without reading
    // it: a kept column's old values are never seen
    let mut results: Vec<Column> = rb.reds.iter().map(|r| spares.take(r.acc, m)).collect();
    let outs = Dsts(
        results
            .iter_mut()
            .map(|c| match c {
                Column::Bool(v) => v.as_mut_ptr().cast::<c_void>(),
                Column::Int8(v) => v.as_mut_ptr().cast(),
                Column::UInt8(v) => v.as_mut_ptr().cast(),
                Column::Int16(v) => v.as_mut_ptr().cast(),
                Column::UInt16(v) => v.as_mut_ptr().cast(),
                Column::Int32(v) => v.as_mut_ptr().cast(),
                Column::UInt32(v) => v.as_mut_ptr().cast(),
                Column::Int64(v) => v.as_mut_ptr().cast(),
                Column::UInt64(v) => v.as_mut_ptr().cast(),
                Column::Float32(v) => v.as_mut_ptr().cast(),
                Column::Float64(v) => v.as_mut_ptr().cast(),
                Column::Complex64(v) => v.as_mut_ptr().cast(),
                Column::Complex128(v) => v.as_mut_ptr().cast(),
            })
            .collect(),
    );
    let n_tasks = m.div_ceil(rows);
    let run_task = |t: usize| {
        let m0 = t * rows;
        let m1 = (m0 + rows).min(m);
        // SAFETY: `f` is the row-reduction loop generated for this program and these
        // reductions (same registers, dtypes, leaf kinds); the leaf pointers address data of
        // each register's dtype with at least `m * k` elements (streamed) or one (uniform),
        // checked in `leaves`; `results[j]` holds `m` values of reduction j's accumulator
        // dtype, owned here for the run; this task writes only rows [m0, m1) of each.
        unsafe { f(m0 as i64, m1 as i64, k as i64, table.table(), outs.table()) };
    };
    if points <= SERIAL_POINTS {
        (0..n_tasks).for_each(run_task);
    } else {
        (0..n_tasks).into_par_iter().for_each(run_task);
    }
    count_run();
    Ok(Some(results))
}
